#!/usr/bin/env bash
# One GPU call of a whole-suite `kopt optimize` run that may span several
# calls: restores the cache (device ceilings, bundles, memory) and the run
# store carried in .devbin, runs or resumes until DEADLINE seconds after the
# script started (SIGINT: the run stops cleanly and can be resumed), then
# leaves the store, the result and the cache in OUT for the next call.
#
#   bench/suite_call.sh OUT DEADLINE_S [RUN_ID] [-- extra optimize args]
#
# First call: no RUN_ID (extra args such as --profile none go to optimize).
# Next calls: copy OUT/runs.db* and OUT/cache.tgz into .devbin, pass RUN_ID.
set -u
OUT=$1; DEADLINE=$2; RUN=${3:-}; shift 3 2>/dev/null || shift $#
[ "${1:-}" = "--" ] && shift
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=${KOPT_ROOT:-$PWD} KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache} PYTHONUNBUFFERED=1
mkdir -p "$KOPT_CACHE"
[ -f .devbin/cache.tgz ] && tar xzf .devbin/cache.tgz -C "$KOPT_CACHE"
for f in .devbin/runs.db*; do [ -f "$f" ] && cp "$f" "$OUT/"; done
left=$((DEADLINE - SECONDS))
if [ -z "$RUN" ]; then
  timeout -s INT -k 30 "$left" "$K" optimize tasks/ --store "$OUT/runs.db" --json "$OUT/suite.json" --out "$OUT/best" "$@"
else
  timeout -s INT -k 30 "$left" "$K" optimize --resume "$RUN" --store "$OUT/runs.db" --json "$OUT/suite.json" --out "$OUT/best" "$@"
fi
echo "optimize exit: $?"
(cd "$KOPT_CACHE" && tar czf "$OUT/cache.tgz" $(ls -d devices bundles memory.db* 2>/dev/null))
ls -la "$OUT"
