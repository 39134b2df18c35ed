#!/usr/bin/env bash
# Session 23, second GPU call: `kopt optimize` on the LSTM task after the
# capture fix (a storage argument recorded by its size): how long the
# capture takes now, and whether the plan's CUDA-graph option is measured
# and verified (expect ~2.9x eager from session 22's probe).
#   bash bench/s23/call2.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout -s INT -k 15 420 $K optimize tasks/level3/04_lstm.py --budget 150s --no-shipped --profile none -v --json $OUT/lstm_opt.json > $OUT/lstm_opt.log 2>&1
echo "optimize exit $? at $SECONDS s"
tr '\r' '\n' < $OUT/lstm_opt.log | grep -v "^\s*$" | grep -v "^\[" | tail -60
