#!/usr/bin/env bash
# Session 22, first GPU call (steps skipped once the call's time runs low):
# NCHW <-> NHWC transpose variants; the BatchNorm apply writing NCHW itself;
# the resnet replay with both against session 21's (kopt eval --compile: the
# compile-slowed verdict reproduced or not), then with CUDNN_BENCHMARK=0;
# the LSTM's capture costs and the reference in a CUDA graph; kernel tables
# of eager / compile / replay on small_cnn.
#   bash bench/s22/call1.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
left() { [ $SECONDS -lt $1 ]; }
timeout 100 python bench/s22/lstm_probe.py > $OUT/lstm.log 2>&1; cat $OUT/lstm.log; echo "elapsed $SECONDS s"
echo "=== optimize the LSTM (no compile baseline): does its plan's CUDA graph get measured?"
timeout -s INT -k 10 140 $K optimize tasks/level3/04_lstm.py --no-compile --budget 40s --no-shipped --profile none -v --json $OUT/lstm_opt.json > $OUT/lstm_opt.log 2>&1
grep -v "^\s*$" $OUT/lstm_opt.log | tail -40; echo "elapsed $SECONDS s"
left 300 && timeout 100 python bench/s22/transpose_bench.py > $OUT/transpose.log 2>&1; cat $OUT/transpose.log | head -40
echo "elapsed $SECONDS s"
timeout 60 python bench/s22/bn_nchw_bench.py > $OUT/bn_nchw.log 2>&1; cat $OUT/bn_nchw.log
C=$OUT/cands; mkdir -p $C
cp bench/s22/replays/02_resnet_basic_block.py $C/s22.py
cp bench/s21/replays/02_resnet_basic_block.py $C/s21.py
sed 's/^CUDNN_BENCHMARK = 1  # kopt:knob CUDNN_BENCHMARK 1 /CUDNN_BENCHMARK = 0  # kopt:knob CUDNN_BENCHMARK 0 /' $C/s22.py > $C/s22_bench0.py
echo "=== eval: s22 replay, s21 replay, s22 with CUDNN_BENCHMARK=0"
timeout 140 $K eval tasks/level3/02_resnet_basic_block.py $C/s22.py $C/s21.py $C/s22_bench0.py --compile --max-seconds 1 --json $OUT/eval1.json 2>&1 | tail -32
echo "elapsed $SECONDS s"
left 400 && { echo "=== eval 2: s22 replay with CUDNN_BENCHMARK=0, s22 replay"
  timeout 100 $K eval tasks/level3/02_resnet_basic_block.py $C/s22_bench0.py $C/s22.py --compile --max-seconds 1 --json $OUT/eval2.json 2>&1 | tail -24; }
echo "elapsed $SECONDS s"
