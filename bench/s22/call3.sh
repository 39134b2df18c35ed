#!/usr/bin/env bash
# Session 22, LSTM call: `kopt optimize` on the LSTM task alone (its plan's
# CUDA-graph option: measured and verified or not, and how long the capture
# takes), with the capture's Python profiled beside it in a second process
# for its first 150 s (cProfile + stacks every 20 s; it ends before the
# optimize run's search starts timing).
#   bash bench/s22/call3.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
(timeout 150 python bench/s22/capture_profile.py tasks/level3/04_lstm.py > $OUT/lstm_capture.log 2>&1) &
timeout -s INT -k 15 225 $K optimize tasks/level3/04_lstm.py --no-compile --budget 60s --no-shipped --profile none -v --json $OUT/lstm_opt.json > $OUT/lstm_opt.log 2>&1
echo "optimize exit $? at $SECONDS s"
wait
grep -v "^\s*$" $OUT/lstm_opt.log | tail -45
grep -A8 "Timeout\|capture took" $OUT/lstm_capture.log | head -100
grep -A30 "Ordered by" $OUT/lstm_capture.log | head -35
