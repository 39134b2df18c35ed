#!/usr/bin/env bash
# Session 24, second GPU call: where the channels-last replays' time goes
# (torch.profiler kernel tables, bench/s20/profile_replay.py) for level2/02
# with CHANNELS_LAST 1 and 0 (the search picked 0: 0.72 ms against 0.82 for
# 1 and compile's 0.51 on an H100) and the small CNN; then `kopt optimize`
# on level2/04 after the group-norm fix (NCHW input).
#   bash bench/s24/call2.sh OUT
set -u
OUT=$1
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=.devbin/kopt
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
R=bench/s24/replays
for a in "02_conv2d_relu_biasadd.py CHANNELS_LAST=1" "02_conv2d_relu_biasadd.py CHANNELS_LAST=0" "05_small_cnn.py CHANNELS_LAST=1"; do
  set -- $a
  timeout 120 python bench/s20/profile_replay.py $R/$1 $2 2>&1 | grep -v "^\s*$" | cut -c1-150 | head -30
done
TASKS="level2/04_conv2d_groupnorm_tanh_hardswish_residual:50:110" bash bench/s24/call1.sh $OUT
