#!/usr/bin/env bash
# Session 22, first GPU call: kernel tables of eager / compile / replay on the
# conv nets, and the compile-slowed verdict reproduced with kopt eval.
#   bash bench/s22/call1.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout 200 python bench/s22/transpose_bench.py > $OUT/transpose.log 2>&1; cat $OUT/transpose.log | head -40
timeout 100 python bench/s22/bn_nchw_bench.py > $OUT/bn_nchw.log 2>&1; cat $OUT/bn_nchw.log
R=bench/s21/replays/02_resnet_basic_block.py
timeout 120 python bench/s22/probe.py tasks/level3/02_resnet_basic_block.py $R > $OUT/probe_resnet.log 2>&1
timeout 120 python bench/s22/probe.py tasks/level3/05_small_cnn.py bench/s22/small_cnn_replay.py > $OUT/probe_cnn.log 2>&1
grep -h "clean\|round\|replay " $OUT/probe_*.log
C=$OUT/cands; mkdir -p $C
cp $R $C/bn1.py
sed 's/^CUDNN_BENCHMARK = 1  # kopt:knob CUDNN_BENCHMARK 1 /CUDNN_BENCHMARK = 0  # kopt:knob CUDNN_BENCHMARK 0 /' $R > $C/bench0.py
for i in 1 2; do
  echo "=== eval $i"
  timeout 120 $K eval tasks/level3/02_resnet_basic_block.py $C/bn1.py --compile --max-seconds 1 --json $OUT/eval$i.json 2>&1 | tail -12
done
echo "=== eval CUDNN_BENCHMARK=0"
timeout 120 $K eval tasks/level3/02_resnet_basic_block.py $C/bench0.py --compile --max-seconds 1 --json $OUT/eval_b0.json 2>&1 | tail -12
echo "elapsed $SECONDS s"
