#!/usr/bin/env bash
# Session 23, last call (little device time left): `kopt optimize` on the
# LSTM task alone after the capture fix: capture time, and whether the
# plan's CUDA-graph option is measured and verified (expect ~2.9x eager).
#   bash bench/s23/call3.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout -s INT -k 10 200 $K optimize tasks/level3/04_lstm.py --budget 80s --no-shipped --profile none -v --json $OUT/04_lstm.json > $OUT/04_lstm.log 2>&1
echo "== optimize exit $? at $SECONDS s"
tr '\r' '\n' < $OUT/04_lstm.log | grep -v "^\s*$" | grep -v "^\[" | grep -v "^kopt: \[" | tail -45 | cut -c1-240
