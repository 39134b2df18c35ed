#!/usr/bin/env bash
# Session 22, last call (little device time left): where the LSTM task's
# capture spends its minutes (cProfile + stacks every 20 s, 130 s at most).
#   bash bench/s22/call4.sh OUT
set -u
OUT=$1
export KOPT_ROOT=$PWD PYTHONUNBUFFERED=1 PYTHONPATH=python
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout 130 python bench/s22/capture_profile.py tasks/level3/04_lstm.py > $OUT/lstm_capture.log 2>&1
echo "exit $? at $SECONDS s"
grep -A9 "Timeout\|capture took" $OUT/lstm_capture.log | head -90
grep -A30 "Ordered by" $OUT/lstm_capture.log | head -35
