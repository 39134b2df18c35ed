#!/usr/bin/env bash
# Session 25, one GPU call (what the device time allowed): `kopt optimize`
# on the level-2 and level-3 groups in one process (default proposer, no
# shipped solutions, no profiling, a 5-minute budget for the 11 tasks),
# stopped cleanly (SIGINT) before the call's limit. Measures the group norm
# folded into the fused tail (level2/04), the channels-last tails with
# per-channel bias indexing (level2/02) and every level-2/3 plan on one card.
#   bash bench/s25/call1.sh OUT [BUDGET] [DEADLINE_S]
set -u
OUT=$1; BUDGET=${2:-5m}; DEADLINE=${3:-530}
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout -s INT -k 20 $((DEADLINE - SECONDS)) $K optimize tasks/level2 tasks/level3 --budget $BUDGET \
  --no-shipped --profile none --store $OUT/runs.db --json $OUT/l23.json > $OUT/l23.log 2>&1
echo "optimize exit $? at $SECONDS s"
tr '\r' '\n' < $OUT/l23.log | grep -v "^\s*$" | grep -vE "^kopt: \[.*\] node" | tail -60 | cut -c1-240
[ -f $OUT/l23.json ] && python3 bench/suite_summary.py $OUT/l23.json tasks
gzip -f $OUT/runs.db 2>/dev/null; ls -la $OUT
