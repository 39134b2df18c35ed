#!/usr/bin/env bash
# Session 28's first GPU check: kopt optimize on the tasks sessions 26-27
# changed without a GPU to time them (row-kernel preloads and CACHE knob,
# column-cache preloads, the register pool kernel, max.NaN, a returned
# convolution's bias in a tail of its own), then which
# kernels eager and torch.compile run for the convolutions compile wins.
#   bash bench/s28/check.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
$K optimize tasks/level1/04_softmax.py tasks/level1/05_log_softmax.py tasks/level1/12_max_dim.py \
  tasks/level1/14_maxpool2d.py tasks/level1/15_avgpool2d.py tasks/unseen/02_softmax_dim1_temperature.py \
  tasks/unseen/03_rmsnorm_silu_gate.py tasks/unseen/06_logsumexp_lastdim.py \
  tasks/level1/26_conv2d.py tasks/level1/28_conv_transpose2d.py bench/s28/tasks/diag_matmul.py \
  bench/s28/tasks/kl_div_batchmean.py --budget 280s --no-shipped --profile none --json "$OUT/opt.json" > "$OUT/opt.log" 2>&1
grep -A18 "^task " "$OUT/opt.log" | head -30
python3 bench/s28/torch_kernels.py tasks/level1/26_conv2d.py tasks/level1/28_conv_transpose2d.py \
  > "$OUT/torch_kernels.log" 2>&1
grep -v Warn "$OUT/torch_kernels.log" | head -90
