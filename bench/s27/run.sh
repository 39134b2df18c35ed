#!/usr/bin/env bash
# Session 27's GPU check: the pool template's register kernel against the
# staged kernel at session 26's tuned knobs, and the gated RMS norm's
# generated row kernel before/after loading its gate and weight up front.
# Each eval is one worker process (candidates, eager, torch.compile
# interleaved).   bash bench/s27/run.sh OUT
set -u
OUT=$1
K=${KOPT:-.devbin/kopt}
export KOPT_ROOT=$PWD KOPT_CACHE=${KOPT_CACHE:-$PWD/.kopt/cache} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
$K eval tasks/level1/14_maxpool2d.py bench/s27/maxpool_regs.cu bench/s27/maxpool_regs_v4r1.cu \
  bench/s27/maxpool_regs_v2r4.cu bench/s27/maxpool_staged_s26best.cu --compile --max-seconds 1 \
  > "$OUT/maxpool.log" 2>&1
$K eval tasks/unseen/03_rmsnorm_silu_gate.py bench/s27/rmsgate_before.cu bench/s27/rmsgate_after.cu \
  --compile --max-seconds 1 > "$OUT/rmsgate.log" 2>&1
$K eval tasks/level1/15_avgpool2d.py bench/s27/avgpool_regs.cu bench/s27/avgpool_staged_s26best.cu \
  --compile --max-seconds 1 > "$OUT/avgpool.log" 2>&1
for f in maxpool rmsgate avgpool; do echo "== $f"; grep -E "^(candidate|verdict|eager|torch.compile|floor)|^ *(candidate|eager|torch)" "$OUT/$f.log"; done
