#!/usr/bin/env bash
# Session 22, first GPU call: NCHW <-> NHWC transpose variants; the
# BatchNorm apply writing NCHW itself; the resnet replay with both against
# session 21's (kopt eval --compile, twice: the compile-slowed verdict
# reproduced or not); kernel tables of eager / compile / replay on the conv
# nets; the replay with CUDNN_BENCHMARK=0.
#   bash bench/s22/call1.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout 150 python bench/s22/lstm_probe.py > $OUT/lstm.log 2>&1; cat $OUT/lstm.log
timeout 150 python bench/s22/transpose_bench.py > $OUT/transpose.log 2>&1; cat $OUT/transpose.log | head -40
timeout 60 python bench/s22/bn_nchw_bench.py > $OUT/bn_nchw.log 2>&1; cat $OUT/bn_nchw.log
C=$OUT/cands; mkdir -p $C
cp bench/s22/replays/02_resnet_basic_block.py $C/s22.py
cp bench/s21/replays/02_resnet_basic_block.py $C/s21.py
for i in 1 2; do
  echo "=== eval $i: s22 replay, s21 replay"
  timeout 120 $K eval tasks/level3/02_resnet_basic_block.py $C/s22.py $C/s21.py --compile --max-seconds 1 --json $OUT/eval$i.json 2>&1 | tail -24
  echo "elapsed $SECONDS s"
done
timeout 100 python bench/s22/probe.py tasks/level3/02_resnet_basic_block.py $C/s22.py > $OUT/probe_resnet.log 2>&1
timeout 100 python bench/s22/probe.py tasks/level3/05_small_cnn.py bench/s22/small_cnn_replay.py > $OUT/probe_cnn.log 2>&1
grep -h "clean\|round\|replay " $OUT/probe_*.log
echo "elapsed $SECONDS s"
sed 's/^CUDNN_BENCHMARK = 1  # kopt:knob CUDNN_BENCHMARK 1 /CUDNN_BENCHMARK = 0  # kopt:knob CUDNN_BENCHMARK 0 /' $C/s22.py > $C/bench0.py
echo "=== eval CUDNN_BENCHMARK=0"
timeout 100 $K eval tasks/level3/02_resnet_basic_block.py $C/bench0.py --compile --max-seconds 1 --json $OUT/eval_b0.json 2>&1 | tail -12
echo "elapsed $SECONDS s"
