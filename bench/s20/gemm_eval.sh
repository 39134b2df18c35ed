#!/usr/bin/env bash
# Session 20: the wgmma 3xTF32 GEMM against the mma.sync one and eager, on the
# suite's GEMM tasks, one kopt eval process per task (same card, interleaved).
#   bash bench/s20/gemm_eval.sh OUT [max_seconds]
set -u
OUT=$1; MS=${2:-1}
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=${KOPT_ROOT:-$PWD} KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache} PYTHONUNBUFFERED=1
C=$OUT/cands; mkdir -p "$C"
# inst SRC NAME SLOT=V... KNOB=V...: a copy with slots (#define) and knobs (constexpr) set.
inst() {
  local src=$1 name=$2; shift 2
  cp "$src" "$C/$name.cu"
  for kv in "$@"; do
    local k=${kv%%=*} v=${kv#*=}
    sed -i -E "s/^#define $k [0-9]+/#define $k $v/; s/^constexpr int $k = [0-9]+;/constexpr int $k = $v;/" "$C/$name.cu"
  done
}
OLD=kernels/gemm/gemm_3xtf32.cu NEW=kernels/gemm/gemm_wgmma_3xtf32.cu
run() {  # task, candidates...
  local t=$1; shift
  echo "=== $t"
  timeout 200 "$K" eval "$t" "$@" --compile --arch sm_90a --max-seconds "$MS" --json "$OUT/$(basename "$t" .py).json" 2>&1 | tail -25
}
if [ "${ONLY_SPLITK:-0}" != 1 ]; then
inst $OLD mm_old; inst $NEW mm_new; inst $NEW mm_new_bn64 BN=64 STAGES=4; inst $NEW mm_new_c1 CONSUMERS=1 STAGES=4
run tasks/level1/21_matmul_square.py $C/mm_new.cu $C/mm_old.cu $C/mm_new_bn64.cu $C/mm_new_c1.cu
inst $OLD mt_old KOPT_TRANS_B=1; inst $NEW mt_new KOPT_TRANS_B=1
run tasks/level1/23_matmul_transposed_b.py $C/mt_new.cu $C/mt_old.cu
inst $NEW lin_new KOPT_TRANS_B=1 KOPT_BIAS=1 KOPT_EPILOGUE=2 KOPT_OUT_SCALE_X1000=1500
inst $OLD lin_old KOPT_TRANS_B=1 KOPT_BIAS=1 KOPT_EPILOGUE=2 KOPT_OUT_SCALE_X1000=1500
run tasks/level2/01_linear_gelu_scale.py $C/lin_new.cu $C/lin_old.cu
inst $OLD bmm_old KOPT_BATCHED=1; inst $NEW bmm_new KOPT_BATCHED=1
run tasks/level1/22_bmm.py $C/bmm_new.cu $C/bmm_old.cu
fi
if [ "${SPLITK:-0}" = 1 ]; then
  inst $NEW sk_new KOPT_TRANS_B=1 KOPT_BIAS=1 KOPT_EPILOGUE=1
  inst $NEW sk_nosplit KOPT_TRANS_B=1 KOPT_BIAS=1 KOPT_EPILOGUE=1 SPLIT_K=0
  inst $OLD sk_old KOPT_TRANS_B=1 KOPT_BIAS=1 KOPT_EPILOGUE=1
  run bench/s20/tasks/linear_small_m_relu.py $C/sk_new.cu $C/sk_nosplit.cu $C/sk_old.cu
fi
