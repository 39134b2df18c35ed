#!/usr/bin/env bash
# Session 23, first GPU call (no kopt binary needed): where the LSTM task's
# capture spends its minutes, three ways: run_capture called directly
# (cProfile + stacks every 20 s), through the worker as kopt's clean worker
# runs it, and through a sandboxed worker (stacks every 30 s,
# KOPT_WORKER_STACKS); kernel tables of eager / compile / session 22's
# replay on small_cnn (bench/s22/probe.py); the resnet replay without the
# cuDNN benchmark knob (kopt eval --compile; needs .devbin carried).
#   bash bench/s23/call1.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python:bench/s22 KOPT_BIN=$K
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout 130 python bench/s22/capture_profile.py tasks/level3/04_lstm.py > $OUT/lstm_capture.log 2>&1
echo "capture exit $? at $SECONDS s"
grep -B2 -A14 "Timeout\|capture took" $OUT/lstm_capture.log | head -120
grep -A40 "Ordered by" $OUT/lstm_capture.log | head -45
T=$PWD/tasks/level3/04_lstm.py
REQ='{"id":1,"op":"capture","task":"'$T'","seeds":[0,1,2],"profile":true}'
worker() {  # mode timeout
  local extra="" s=$SECONDS
  [ $1 = sandbox ] && { mkdir -p /tmp/s23sb; extra="--sandbox /tmp/s23sb --sandbox-order late"; }
  echo "$REQ" | KOPT_WORKER_STACKS=30 timeout $2 python -m kopt.worker --device cuda:0 $extra > $OUT/worker_$1.out 2> $OUT/worker_$1.err
  echo "worker $1: exit $? in $((SECONDS - s)) s; replies: $(grep -o '"ok":[a-z]*\|"event":"[a-z_]*"' $OUT/worker_$1.out | tr '\n' ' ')"
  grep -A12 "Thread\|Timeout" $OUT/worker_$1.err | head -70
}
direct=$SECONDS
# Only when the direct capture was quick: is the worker (or its sandbox) the slow part?
[ $direct -lt 70 ] && worker plain 130
[ $direct -lt 70 ] && [ $SECONDS -lt 150 ] && worker sandbox 130
echo "at $SECONDS s"
# Session 22's small CNN replay with its cuDNN benchmark knob at 0 (the knob is gone since f5d6004).
sed 's/^CUDNN_BENCHMARK = 1  # kopt:knob CUDNN_BENCHMARK 1 /CUDNN_BENCHMARK = 0  # kopt:knob CUDNN_BENCHMARK 0 /' \
  bench/s22/small_cnn_replay.py > $OUT/small_cnn_replay.py
timeout 120 python bench/s22/probe.py tasks/level3/05_small_cnn.py $OUT/small_cnn_replay.py > $OUT/small_cnn.log 2>&1
echo "probe exit $? at $SECONDS s"
grep -E "clean:|^replay|^round|Error|error" $OUT/small_cnn.log | cut -c1-200
C=$OUT/cands; mkdir -p $C
cp bench/s22/replays/02_resnet_basic_block.py $C/s22b.py
timeout 120 $K eval tasks/level3/02_resnet_basic_block.py $C/s22b.py --compile --max-seconds 1 --json $OUT/eval_resnet.json 2>&1 | tail -22
echo "done at $SECONDS s"
