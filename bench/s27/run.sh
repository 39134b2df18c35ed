#!/usr/bin/env bash
# Session 27's GPU check: the pool template's register kernel against the
# staged kernel at session 26's tuned knobs, and the gated RMS norm's
# generated row kernel before/after loading its gate and weight up front
# (rmsgate_*.cu: the fusion generator's output at e0930f9 and 2fac9e3, kept
# verbatim). Each eval is one worker process (candidates, eager,
# torch.compile interleaved).   bash bench/s27/run.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache} PYTHONUNBUFFERED=1
C=$OUT/candidates
mkdir -p "$C"
# pool NAME MAX THREADS V BLOCKS_PER_SM SMEM_KB LOADS ROWS: kernels/pool/pool2d.cu
# for the suite's 3x3 stride-2 padding-1 pools at those knobs.
pool() {
  sed -e "s/^#define KOPT_MAX .*/#define KOPT_MAX $2/" \
    -e "s/^constexpr int THREADS = .*/constexpr int THREADS = $3;/" \
    -e "s/^constexpr int V = .*/constexpr int V = $4;/" \
    -e "s/^constexpr int BLOCKS_PER_SM = .*/constexpr int BLOCKS_PER_SM = $5;/" \
    -e "s/^constexpr int SMEM_KB = .*/constexpr int SMEM_KB = $6;/" \
    -e "s/^constexpr int LOADS = .*/constexpr int LOADS = $7;/" \
    -e "s/^constexpr int ROWS = .*/constexpr int ROWS = $8;/" kernels/pool/pool2d.cu > "$C/$1.cu"
}
pool maxpool_regs 1 256 2 16 48 4 2
pool maxpool_regs_v4r1 1 256 4 16 48 4 1
pool maxpool_regs_v2r4 1 256 2 16 48 4 4
pool maxpool_staged_s26best 1 64 8 32 32 1 0
pool avgpool_regs 0 256 2 16 48 4 2
pool avgpool_staged_s26best 0 64 8 64 16 4 0
nvidia-smi --query-gpu=name --format=csv,noheader
$K eval tasks/level1/14_maxpool2d.py "$C/maxpool_regs.cu" "$C/maxpool_regs_v4r1.cu" \
  "$C/maxpool_regs_v2r4.cu" "$C/maxpool_staged_s26best.cu" --compile --max-seconds 1 \
  > "$OUT/maxpool.log" 2>&1
$K eval tasks/unseen/03_rmsnorm_silu_gate.py bench/s27/rmsgate_before.cu bench/s27/rmsgate_after.cu \
  --compile --max-seconds 1 > "$OUT/rmsgate.log" 2>&1
$K eval tasks/level1/15_avgpool2d.py "$C/avgpool_regs.cu" "$C/avgpool_staged_s26best.cu" \
  --compile --max-seconds 1 > "$OUT/avgpool.log" 2>&1
for f in maxpool rmsgate avgpool; do echo "== $f"; grep -E "^(candidate|verdict)|^ *(candidate|eager|torch)" "$OUT/$f.log"; done
