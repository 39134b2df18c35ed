#!/usr/bin/env bash
# Session 24, third GPU call (what the device time left allowed of
# call2.sh): level2/02's channels-last replay under torch.profiler (the
# transposing tail with the per-channel bias indexing), then `kopt
# optimize` on level2/04 (group norm given NCHW input) and level2/02.
#   bash bench/s24/call3.sh OUT
set -u
OUT=$1
export KOPT_ROOT=$PWD KOPT_CACHE=$PWD/.kopt/cache PYTHONUNBUFFERED=1 PYTHONPATH=python KOPT_BIN=.devbin/kopt
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
timeout 70 python bench/s20/profile_replay.py bench/s24/replays/02_conv2d_relu_biasadd.py CHANNELS_LAST=1 2>&1 |
  grep -v "^\s*$" | cut -c1-150 | head -24
TASKS="level2/04_conv2d_groupnorm_tanh_hardswish_residual:30:80 level2/02_conv2d_relu_biasadd:30:80" \
  bash bench/s24/call1.sh $OUT
