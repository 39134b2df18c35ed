#!/usr/bin/env bash
# Session 22, second GPU call: where the LSTM's capture spends its minutes
# (cProfile + stacks every 20 s); the resnet replay without the cuDNN
# benchmark knob and with the transpose's new defaults, against eager and
# torch.compile.
#   bash bench/s22/call2.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout 170 python bench/s22/capture_profile.py tasks/level3/04_lstm.py > $OUT/lstm_capture.log 2>&1
grep -v "^\s*$" $OUT/lstm_capture.log | grep -A8 "Timeout\|capture took" | head -120
grep -A40 "Ordered by" $OUT/lstm_capture.log | head -45
echo "elapsed $SECONDS s"
C=$OUT/cands; mkdir -p $C
cp bench/s22/replays/02_resnet_basic_block.py $C/s22b.py
timeout 120 $K eval tasks/level3/02_resnet_basic_block.py $C/s22b.py --compile --max-seconds 1 --json $OUT/eval3.json 2>&1 | tail -22
echo "elapsed $SECONDS s"
