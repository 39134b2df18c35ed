"""kopt.load_cuda / load_so and the ctypes mirror of include/kopt/abi.h."""

import ctypes
import os
import shutil
import subprocess

import pytest
import torch

import kopt

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TINY_KERNEL = r"""
#include <cuda_runtime.h>
#include <kopt/abi.h>

__global__ void scale2(const float* x, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

extern "C" int kopt_init(const kopt_tensor* in, int n_in, kopt_stream stream) { return 0; }

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  long long n = kopt_numel(in[0]);
  scale2<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(
      (const float*)in[0].data, (float*)out[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
"""

def _kopt_binary():
    """The kopt executable load_cuda builds through: KOPT_BIN (ctest sets it),
    else this checkout's build/kopt."""
    b = os.environ.get("KOPT_BIN") or os.path.join(REPO, "build", "kopt")
    return b if os.access(b, os.X_OK) else None


KOPT_BIN = _kopt_binary()
HAVE_NVCC = bool(os.environ.get("KOPT_NVCC") or shutil.which("nvcc") or os.access("/usr/local/cuda/bin/nvcc", os.X_OK))
needs_kopt = pytest.mark.skipif(KOPT_BIN is None or not HAVE_NVCC,
                                reason="needs the kopt binary (KOPT_BIN or build/kopt) and nvcc")


@pytest.fixture
def kopt_env(tmp_path, monkeypatch):
    """load_cuda under kopt: KOPT_BIN, a private cache, a fixed arch."""
    monkeypatch.setenv("KOPT_BIN", KOPT_BIN)
    monkeypatch.setenv("KOPT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KOPT_ARCH", "sm_90")
    return tmp_path / "cache" / "builds"


def test_struct_layout_matches_the_header(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    assert ctypes.sizeof(kopt.KoptTensor) == 8 + 4 + 4 + 8 * 8 + 8 * 8
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "layout.c"
    src.write_text(r"""
#include <stddef.h>
#include <stdio.h>
#include "kopt/abi.h"
int main(void) {
  printf("%zu %zu %zu %zu %zu %zu %d %d\n", sizeof(kopt_tensor), offsetof(kopt_tensor, data),
         offsetof(kopt_tensor, dtype), offsetof(kopt_tensor, ndim), offsetof(kopt_tensor, shape),
         offsetof(kopt_tensor, strides), (int)KOPT_MAX_DIMS, (int)KOPT_INT16);
  return 0;
}
""")
    exe = tmp_path / "layout"
    subprocess.run([cc, f"-I{REPO}/include", str(src), "-o", str(exe)], check=True)
    got = [int(v) for v in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()]
    K = kopt.KoptTensor
    assert got == [ctypes.sizeof(K), K.data.offset, K.dtype.offset, K.ndim.offset, K.shape.offset,
                   K.strides.offset, kopt.KOPT_MAX_DIMS, kopt.dtype_code(torch.int16)]


def test_tensor_array_fields():
    t = torch.zeros(2, 3, 4)[:, 1]  # non-contiguous view
    arr = kopt.make_tensor_array([t, torch.tensor(3, dtype=torch.int64)])
    assert arr[0].data == t.data_ptr() and arr[0].dtype == 0 and arr[0].ndim == 2
    assert list(arr[0].shape)[:2] == [2, 4] and list(arr[0].strides)[:2] == [12, 1]
    assert arr[1].ndim == 0 and arr[1].dtype == 5
    with pytest.raises(TypeError):
        kopt.make_tensor_array([torch.zeros(2, dtype=torch.complex64)])


@needs_kopt
def test_load_cuda_builds_through_kopt_and_caches(kopt_env):
    m1 = kopt.load_cuda(TINY_KERNEL, name="tiny")
    assert m1.cache_hit is False and os.path.isfile(m1.path)
    # The Builder's cache, as for cuda candidates: <cache>/builds/<hash>/candidate.so.
    assert m1.path.startswith(str(kopt_env)) and os.path.basename(m1.path) == "candidate.so"
    assert os.path.isfile(os.path.join(os.path.dirname(m1.path), "build.json"))
    assert m1.has_init
    assert [p for p in os.listdir(kopt_env) if p.startswith(".tmp")] == []
    assert kopt.LOADED_SO[-1] == m1.path
    mtime = os.stat(m1.path).st_mtime_ns
    m2 = kopt.load_cuda(TINY_KERNEL, name="tiny")
    assert m2.cache_hit is True and m2.path == m1.path and os.stat(m2.path).st_mtime_ns == mtime
    m3 = kopt.load_cuda(TINY_KERNEL, name="tiny", extra_cflags=["-DUNUSED=1"])  # flags are part of the key
    assert m3.path != m1.path
    assert kopt.load_so(m1.path).has_init
    if not torch.cuda.is_available():
        pytest.skip("compiled; no GPU to call it on")
    x = torch.randn(1000, device="cuda")
    y = torch.full_like(x, float("nan"))
    m1([x], [y])
    torch.cuda.synchronize()
    assert torch.equal(y, 2 * x)


@needs_kopt
def test_load_cuda_compile_error(kopt_env):
    with pytest.raises(kopt.CompileError) as info:
        kopt.load_cuda("extern \"C\" int kopt_forward(this is not C++);", name="broken")
    assert "error" in info.value.stderr.lower()
    assert [p for p in os.listdir(kopt_env) if not p.startswith(".")] == []  # failures are not cached


def test_load_cuda_without_kopt_says_how(monkeypatch):
    monkeypatch.delenv("KOPT_BIN", raising=False)
    with pytest.raises(kopt.CompileError, match="KOPT_BIN") as info:
        kopt.load_cuda(TINY_KERNEL)
    message = str(info.value)
    assert "\n" not in message and message.endswith(".") and "run the candidate under kopt" in message


def test_load_so_errors(tmp_path):
    with pytest.raises(kopt.LoadError):
        kopt.load_so(str(tmp_path / "missing.so"))
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "nofwd.c"
    src.write_text("int something(void) { return 1; }\n")
    so = tmp_path / "nofwd.so"
    subprocess.run([cc, "-shared", "-fPIC", str(src), "-o", str(so)], check=True)
    with pytest.raises(kopt.LoadError, match="kopt_forward"):
        kopt.load_so(str(so))


def test_cpu_built_candidate_call_path(tmp_path):
    """The ctypes call path end to end with a host-only .so (no GPU needed):
    kopt_init once, then kopt_forward; a non-zero code raises CandidateError."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "host.c"
    src.write_text(r"""
#include "kopt/abi.h"
static int inits = 0;
int kopt_init(const kopt_tensor* in, int n_in, kopt_stream s) { inits++; return 0; }
int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream s) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 1 || in[1].ndim != 0) return 7;
  const float* x = (const float*)in[0].data;
  long long k = *(const long long*)in[1].data;
  float* y = (float*)out[0].data;
  for (long long i = 0; i < in[0].shape[0]; ++i) y[i] = x[i] * (float)k + (float)inits;
  return 0;
}
""")
    so = tmp_path / "host.so"
    subprocess.run([cc, "-shared", "-fPIC", f"-I{REPO}/include", str(src), "-o", str(so)], check=True)
    m = kopt.load_so(str(so))
    x = torch.arange(5, dtype=torch.float32)
    y = torch.empty(5)
    m([x, torch.tensor(3)], [y])
    m([x, torch.tensor(3)], [y])
    assert torch.equal(y, x * 3 + 1)  # kopt_init ran exactly once
    with pytest.raises(kopt.CandidateError) as info:
        m([x], [y])
    assert info.value.code == 7
