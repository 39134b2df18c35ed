#!/usr/bin/env bash
# One GPU call of a whole-suite `kopt optimize` run that may span several
# calls: restores the run's state carried in .devbin (the run store, device
# ceilings, bundles and memory, as state.tgz.* pieces), runs or resumes until
# DEADLINE seconds after the script started (SIGINT: the run stops cleanly and
# can be resumed), then packs the state into OUT/state.tgz.* pieces of 15 MB
# (a call returns files of 16 MiB at most; the suite's store reached 171 MB
# raw in session 13) beside suite.json and the log. The run stops cleanly 60 s
# before DEADLINE (SIGINT) and is killed at DEADLINE if it has not (a capture
# inside torch.compile does not stop at once); leave ~20 s after DEADLINE for
# the packing. A resumed run refuses a GPU other than the one it began on:
# run every call of one run on the same card.
#
#   bench/suite_call.sh OUT DEADLINE_S [RUN_ID] [-- extra optimize args]
#
# First call: no RUN_ID (extra args such as --profile none go to optimize).
# Next calls: RUN_ID `last` (the store's newest run). On the same warm
# machine the store is still in .kopt/cache: copy nothing and issue the call
# at once (a machine goes back after 30 s idle). On a fresh one, copy
# OUT/state.tgz.* into .devbin first (same card only: kopt refuses a resume
# on another GPU).
set -u
OUT=$1; DEADLINE=$2; shift 2
RUN=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then RUN=$1; shift; fi
[ "${1:-}" = "--" ] && shift
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=${KOPT_ROOT:-$PWD} KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache} PYTHONUNBUFFERED=1
mkdir -p "$KOPT_CACHE"
if ls .devbin/state.tgz.* > /dev/null 2>&1; then cat .devbin/state.tgz.* | tar xzf - -C "$KOPT_CACHE"; fi
store=$KOPT_CACHE/suite-runs.db
left=$((DEADLINE - SECONDS - 60))
nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sed 's/^/suite_call: card: /'
if [ -z "$RUN" ]; then
  timeout -s INT -k 60 "$left" "$K" optimize tasks/ --store "$store" --json "$OUT/suite.json" "$@"
else
  timeout -s INT -k 60 "$left" "$K" optimize --resume "$RUN" --store "$store" --json "$OUT/suite.json" "$@"
fi
echo "optimize exit: $?"
(cd "$KOPT_CACHE" && tar czf - $(ls -d suite-runs.db* devices bundles memory.db* 2>/dev/null)) |
  split -b 15M -d - "$OUT/state.tgz."
ls -la "$OUT"
