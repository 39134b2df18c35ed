#!/usr/bin/env bash
# Session 23, second GPU call: `kopt optimize` on the LSTM task after the
# capture fix (a storage argument recorded by its size): how long the
# capture takes now, and whether the plan's CUDA-graph option is measured
# and verified (expect ~2.9x eager from session 22's probe); then on the
# small CNN with the NHWC pool kernel (conv bias + ReLU after the max) and
# the narrow transpose (expect the replay well under compile's 0.66 ms on
# an H100: ~0.45 ms).
#   bash bench/s23/call2.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
for tb in level3/04_lstm:90:190 level3/05_small_cnn:110:210; do
  IFS=: read t b lim <<< "$tb"
  n=$(basename $t)
  timeout -s INT -k 10 $lim $K optimize tasks/$t.py --budget ${b}s --no-shipped --profile none -v --json $OUT/$n.json > $OUT/$n.log 2>&1
  echo "== $t: optimize exit $? at $SECONDS s"
  tr '\r' '\n' < $OUT/$n.log | grep -v "^\s*$" | grep -v "^\[" | grep -v "^kopt: \[" | tail -40 | cut -c1-240
done
