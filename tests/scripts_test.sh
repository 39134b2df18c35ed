#!/usr/bin/env bash
# The scripts and the test registration tell the truth (ctest entries
# scripts.*, label cpu):
#
#   tests/scripts_test.sh no-tests                  scripts/test fails on a build folder with no tests
#   tests/scripts_test.sh cuobjdump                 scripts/cuobjdump_path finds a cuobjdump that prints SASS
#   tests/scripts_test.sh python-registration BUILD the Python tests are registered even without a usable
#                                                   Python (failing, with the reason), GPU ones one by one
#   tests/scripts_test.sh readme BUILD              the README keeps its two set-up commands, says what works
#                                                   without a GPU, and names only commands kopt has
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

case "${1:-}" in
  no-tests)
    mkdir -p "$tmp/empty"
    out="$(KOPT_SKIP_BUILD=1 KOPT_BUILD_DIR="$tmp/empty" bash "$root/scripts/test" 2>&1)"
    rc=$?
    [ "$rc" -ne 0 ] || fail "scripts/test exited 0 on a build folder with no tests: $out"
    grep -q "No tests were found" <<<"$out" || fail "scripts/test did not say why it failed: $out"
    ;;
  cuobjdump)
    co="$(bash "$root/scripts/cuobjdump_path")"
    [ -n "$co" ] || fail "scripts/cuobjdump_path found no cuobjdump that runs: run scripts/setup"
    nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
    printf '__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n' > "$tmp/k.cu"
    "$nvcc" -arch=sm_90 -cubin -o "$tmp/k.cubin" "$tmp/k.cu" || fail "nvcc could not compile a kernel"
    # Without nvdisasm beside it, cuobjdump prints headers and no SASS.
    sass="$("$co" --dump-sass "$tmp/k.cubin" 2>&1)"
    grep -q "EXIT" <<<"$sass" || fail "$co printed no SASS instructions: $sass"
    echo "cuobjdump: $co"
    ;;
  python-registration)
    build="${2:?usage: scripts_test.sh python-registration BUILD_DIR}"
    # No interpreter: one failing test that says so.
    cmake -S "$root/tests/python_registration" -B "$tmp/none" -DKOPT_SOURCE_DIR="$root" \
      -DKOPT_TEST_PYTHON=/nonexistent/python3 >/dev/null || fail "the registration project did not configure"
    out="$(ctest --test-dir "$tmp/none" --output-on-failure 2>&1)"
    [ $? -ne 0 ] || fail "no interpreter, yet the Python tests passed: $out"
    grep -q "no Python interpreter for the Python tests" <<<"$out" || fail "no reason given: $out"
    # A Python that cannot import torch: every entry fails, naming torch.
    printf '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n' > "$tmp/python-without-torch"
    chmod +x "$tmp/python-without-torch"
    cmake -S "$root/tests/python_registration" -B "$tmp/notorch" -DKOPT_SOURCE_DIR="$root" \
      -DKOPT_TEST_PYTHON="$tmp/python-without-torch" >/dev/null || fail "the registration project did not configure"
    out="$(ctest --test-dir "$tmp/notorch" -R python_cpu.test_units --output-on-failure 2>&1)"
    [ $? -ne 0 ] || fail "a Python without torch, yet the CPU tests passed: $out"
    grep -q "cannot import torch" <<<"$out" || fail "no reason given: $out"
    # The real build: every GPU test of test_gpu.py is its own gpu-labelled entry.
    listed="$(ctest --test-dir "$build" -N -L gpu)"
    for t in $(sed -n 's/^def \(test_[A-Za-z0-9_]*\)(.*/\1/p' "$root/python/tests/test_gpu.py"); do
      grep -q "python_gpu.$t\$" <<<"$listed" || fail "python/tests/test_gpu.py::$t is not a gpu ctest entry"
    done
    listed="$(ctest --test-dir "$build" -N -L cpu)"
    grep -q "python_cpu.test_units$" <<<"$listed" || fail "python_cpu.test_units is not a cpu ctest entry"
    ;;
  readme)
    build="${2:?usage: scripts_test.sh readme BUILD_DIR}"
    readme="$root/README.md"
    blocks="$(awk '/^## Set up and run/{on=1} /^## Everyday commands/{on=0} on && /^```$/{n++} END{print n}' "$readme")"
    [ "$blocks" = 4 ] || fail "README's 'Set up and run' should hold exactly two command blocks, has $((blocks / 2))"
    grep -qx 'scripts/setup && scripts/build && build/kopt bench tasks/' "$readme" || fail "the run command is gone"
    grep -qx 'scripts/setup && scripts/test' "$readme" || fail "the test command is gone"
    section="$(awk '/^### Without a GPU/{on=1; next} /^## /{on=0} on' "$readme")"
    for can in "--device cpu" "kopt profile --replay" "kopt capture TASK --device" "kopt report"; do
      grep -qF -- "$can" <<<"$section" || fail "README's 'Without a GPU' does not mention $can"
    done
    grep -qi "makes GPU kernels fast" "$readme" && fail "README promises optimization kopt does not do yet"
    help="$("$build/kopt" --help)"
    for sub in $(grep -o 'build/kopt [a-z]*' "$readme" | awk '{print $2}' | sort -u); do
      grep -q "^  $sub " <<<"$help" || fail "README runs 'kopt $sub', which kopt --help does not list"
    done
    ;;
  *)
    fail "usage: scripts_test.sh no-tests|cuobjdump|python-registration|readme BUILD_DIR"
    ;;
esac
echo "ok"
