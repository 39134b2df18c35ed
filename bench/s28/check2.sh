#!/usr/bin/env bash
# Session 28's second GPU call: where the conv2d channels-last replay's time
# goes (kernels per knob setting beside eager's), and the diagonal-product
# rewrite on torch 2.x's capture (diag_embed).   bash bench/s28/check2.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
KOPT_BIN=$PWD/$K PYTHONPATH=python python3 bench/s28/replay_kernels.py tasks/level1/26_conv2d.py \
  bench/s28/conv2d_channels_last.py LAYOUT_KERNEL=0 FUSED_TAIL=0 > "$OUT/replay_kernels.log" 2>&1
grep -v Warn "$OUT/replay_kernels.log" | head -60
$K optimize bench/s28/tasks/diag_matmul.py --budget 60s --no-shipped --profile none \
  --json "$OUT/opt2.json" > "$OUT/opt2.log" 2>&1
grep -E "plan|^diag" "$OUT/opt2.log" | head -12
