#!/usr/bin/env bash
# Session 23, first GPU call (no kopt binary needed): where the LSTM task's
# capture spends its minutes (bench/s22/call4.sh), then kernel tables of
# eager / compile / session 22's replay on small_cnn (bench/s22/probe.py).
#   bash bench/s23/call1.sh OUT
set -u
OUT=$1
export KOPT_ROOT=$PWD PYTHONUNBUFFERED=1 PYTHONPATH=python:bench/s22
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout 150 python bench/s22/capture_profile.py tasks/level3/04_lstm.py > $OUT/lstm_capture.log 2>&1
echo "capture exit $? at $SECONDS s"
grep -B2 -A14 "Timeout\|capture took" $OUT/lstm_capture.log | head -150
grep -A40 "Ordered by" $OUT/lstm_capture.log | head -45
timeout 200 python bench/s22/probe.py tasks/level3/05_small_cnn.py bench/s23/small_cnn_replay_s22.py > $OUT/small_cnn.log 2>&1
echo "probe exit $? at $SECONDS s"
cat $OUT/small_cnn.log | cut -c1-220
