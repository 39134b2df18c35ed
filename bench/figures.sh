#!/usr/bin/env bash
# Measures the Foundation figures on a GPU machine, with kopt's own code:
#  1. seconds from a cuda candidate's source to its verdict (fresh build
#     cache each time, task bundle cached; timing excluded), and the same for
#     a load_inline hybrid (fresh torch extension cache);
#  2. agreement of two separate `kopt eval` invocations on the same candidate.
# Usage: bench/figures.sh KOPT_BINARY OUT_DIR
set -u
K=${1:-build/kopt}
OUT=${2:-bench/out}
mkdir -p "$OUT"
export KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache}

task_of() {  # solutions/<stem>.cu -> <level>/<stem>.py
  local sol=$1 dir stem
  dir=$(dirname "$(dirname "$sol")"); stem=$(basename "$sol"); stem=${stem%.*}
  echo "$dir/$stem.py"
}

# 1. Source to verdict, cuda candidates, cold build cache (the task's bundle is
#    captured first if the cache lacks it). The process's whole wall time,
#    worker start included, is logged beside kopt's own figure.
for sol in ${S2V_SOLUTIONS:-tasks/level1/solutions/*.cu}; do
  t=$(task_of "$sol"); n=$(basename "$sol" .cu)
  "$K" capture "$t" --no-compile >/dev/null 2>&1
  rm -rf "$KOPT_CACHE/builds"
  t0=$(date +%s.%N)
  "$K" eval "$t" "$sol" --max-seconds 0.2 --json "$OUT/s2v_cuda_$n.json" > "$OUT/s2v_cuda_$n.txt" 2>&1
  echo "$n process wall $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s" >> "$OUT/wall.txt"
done
# 2. Repeatability: two separate invocations per candidate.
for sol in ${REPEAT_SOLUTIONS:-tasks/level1/solutions/04_softmax.cu tasks/level1/solutions/06_layernorm.cu tasks/level1/solutions/10_sum_dim.cu tasks/level1/solutions/24_matvec.cu tasks/level1/solutions/14_maxpool2d.cu}; do
  t=$(task_of "$sol"); n=$(basename "$sol"); n=${n%.*}
  for rep in $(seq "${REPEAT_COUNT:-2}"); do
    "$K" eval "$t" "$sol" ${EVAL_ARGS:-} --json "$OUT/repeat_${n}_$rep.json" > "$OUT/repeat_${n}_$rep.txt" 2>&1
  done
done
# 3. Source to verdict for the load_inline hybrid (torch's extension cache emptied).
for sol in ${INLINE_SOLUTIONS-$(grep -l load_inline tasks/*/solutions/*.py)}; do
  t=$(task_of "$sol"); n=$(basename "$sol" .py)
  "$K" capture "$t" --no-compile >/dev/null 2>&1
  export TORCH_EXTENSIONS_DIR=$(mktemp -d)
  "$K" eval "$t" "$sol" --max-seconds 0.2 --json "$OUT/s2v_inline_$n.json" > "$OUT/s2v_inline_$n.txt" 2>&1
  unset TORCH_EXTENSIONS_DIR
done

python3 bench/figures_summary.py "$OUT"
cat "$OUT/wall.txt" 2>/dev/null
