#!/usr/bin/env bash
# Session 21: kopt's channels-last BatchNorm kernel in the library replay
# (knob BN_KERNEL) on the GPU: each replay against itself with the knob off,
# eager and torch.compile in one kopt eval process per task; where the
# resnet block's replay spends its time; then kopt optimize on the tasks
# with training-mode BatchNorms (the tuner picks the knobs).
#   bash bench/s21/bn_eval.sh OUT [optimize budget]
# OPT=0 skips the optimize step; COMPILE=0 leaves torch.compile out of eval.
set -u
OUT=$1; BUDGET=${2:-4m}
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=${KOPT_ROOT:-$PWD} KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/^/card: /'
C=$OUT/cands; mkdir -p "$C"
for r in 02_resnet_basic_block:level3 06_linear_batchnorm_relu_scale:level2; do
  s=${r%%:*}; l=${r##*:}
  cp bench/s21/replays/$s.py "$C/${s}_bn1.py"
  sed 's/^BN_KERNEL = 1  # kopt:knob BN_KERNEL 1 /BN_KERNEL = 0  # kopt:knob BN_KERNEL 0 /' \
    bench/s21/replays/$s.py > "$C/${s}_bn0.py"
  echo "=== $s"
  timeout 150 "$K" eval tasks/$l/$s.py "$C/${s}_bn1.py" "$C/${s}_bn0.py" $([ "${COMPILE:-1}" = 1 ] && echo --compile) --max-seconds 1 \
    --json "$OUT/$s.json" 2>&1 | tail -20
done
echo "=== resnet replay profile (BN_KERNEL=1)"
PYTHONPATH=python KOPT_BIN=$K timeout 90 python bench/s20/profile_replay.py "$C/02_resnet_basic_block_bn1.py" 2>&1 | tail -60
[ "${OPT:-1}" = 1 ] || exit 0
echo "=== optimize"
timeout -s INT -k 30 $((560 - SECONDS)) "$K" optimize tasks/level3/02_resnet_basic_block.py \
  tasks/level2/06_linear_batchnorm_relu_scale.py tasks/level3/05_small_cnn.py tasks/level1/09_batchnorm2d.py \
  --budget "$BUDGET" --no-shipped --profile none --json "$OUT/optimize.json" 2>&1 | tail -60
