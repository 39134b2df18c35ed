#!/usr/bin/env bash
# Session 24, first GPU call: `kopt optimize` (default search, no shipped
# solutions, no profiling) on the tasks session 23 and 24 changed:
#   level2/02  conv -> ReLU -> + bias: the fused tail now reads the NHWC
#              convolution output as it is, adds the convolution's bias and
#              writes NCHW (expect the replay near compile's ~0.56 ms on an
#              H100, from 1.24x eager / 0.60x compile in session 19);
#   level3/04  LSTM after the capture fix (expect the capture in seconds and
#              the CUDA-graph option measured: ~2.9x eager);
#   level3/05  small CNN with the NHWC pool kernel (expect well under
#              compile's 0.66 ms on an H100).
#   bash bench/s24/call1.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
for tb in ${TASKS:-level2/02_conv2d_relu_biasadd:50:120 level3/04_lstm:80:180 level3/05_small_cnn:90:190}; do
  IFS=: read t b lim <<< "$tb"
  n=$(basename $t)
  timeout -s INT -k 10 $lim $K optimize tasks/$t.py --budget ${b}s --no-shipped --profile none -v --json $OUT/$n.json > $OUT/$n.log 2>&1
  echo "== $t: optimize exit $? at $SECONDS s"
  tr '\r' '\n' < $OUT/$n.log | grep -v "^\s*$" | grep -E "plan|capture|correct|incorrect|failed|rejected|s: capture|^level|reference kept|vs eager" | grep -v "^kopt: \[.*\] node" | tail -25 | cut -c1-260
done
