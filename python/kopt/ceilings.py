"""`ceilings`: bandwidth and matmul probes on random data."""

from __future__ import annotations

import statistics
import time
from typing import Callable, List, Optional

import torch

VEC_COPY_SOURCE = r"""
#include <cuda_runtime.h>
#include <kopt/abi.h>

__global__ void kopt_vec_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long n4) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (; i < n4; i += stride) dst[i] = src[i];
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in < 1 || n_out < 1) return 1;
  long long n = kopt_numel(in[0]);
  if (n % 4 != 0 || kopt_numel(out[0]) != n) return 2;
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  long long n4 = n / 4;
  long long blocks = (n4 + 255) / 256;
  long long cap = (long long)(sms > 0 ? sms : 132) * 16;
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  kopt_vec_copy<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(
      (const float4*)in[0].data, (float4*)out[0].data, n4);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
"""


def _time_ms(fn: Callable[[], None], device, reps: int, warmup: int) -> float:
    """Median milliseconds of fn (CUDA events on GPU, host clock on CPU)."""
    for _ in range(warmup):
        fn()
    device.sync()
    times: List[float] = []
    if device.is_cuda:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for s, e in zip(starts, ends):
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    else:
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            fn()
            times.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(times)


def _bandwidth_sizes(device) -> List[int]:
    if not device.is_cuda:
        return [16 << 20, 64 << 20]
    sizes = [256 << 20, 1 << 30, 2 << 30]
    free = device.free_bytes() or 0
    fit = [s for s in sizes if 3 * s <= 0.6 * free]
    return fit or [max(16 << 20, int(free * 0.15) // 16 * 16)]


def _matmul_sizes(device) -> List[int]:
    return [4096, 8192] if device.is_cuda else [256, 512]


def run_ceilings(req: dict, device) -> dict:
    seconds = float(req.get("seconds", 3) or 3)
    dev = device.torch_device
    reps = 10 if device.is_cuda else 3
    warmup = 3 if device.is_cuda else 1
    if seconds < 1:
        reps = max(2, reps // 2)

    bandwidth = []
    vec = None
    vec_error = None
    if device.is_cuda:
        try:
            from . import load_cuda

            vec = load_cuda(VEC_COPY_SOURCE, name="kopt_vec_copy")
        except Exception as e:  # noqa: BLE001  (nvcc missing or failed)
            vec_error = f"{type(e).__name__}: {e}"

    results = {"copy_": [], "fill_": [], "sum": [], "add": [], "vec_copy": []}
    for size in _bandwidth_sizes(device):
        n = size // 4
        a = torch.rand(n, device=dev)
        b = torch.empty_like(a)
        results["copy_"].append((2 * size / (_time_ms(lambda: b.copy_(a), device, reps, warmup) / 1e3), size))
        results["fill_"].append((size / (_time_ms(lambda: b.fill_(1.0), device, reps, warmup) / 1e3), size))
        results["sum"].append((size / (_time_ms(lambda: a.sum(), device, reps, warmup) / 1e3), size))
        c = torch.empty_like(a)
        b.copy_(a)
        results["add"].append((3 * size / (_time_ms(lambda: torch.add(a, b, out=c), device, reps, warmup) / 1e3), size))
        del c
        if vec is not None:
            try:
                results["vec_copy"].append(
                    (2 * size / (_time_ms(lambda: vec([a], [b]), device, reps, warmup) / 1e3), size))
            except Exception as e:  # noqa: BLE001
                from .errors import classify

                if classify(e)[1]:
                    raise
                vec_error = f"{type(e).__name__}: {e}"
                vec = None
        del a, b
        device.empty_cache()
    for probe in ("copy_", "fill_", "sum", "add", "vec_copy"):
        if not results[probe]:
            continue
        best, size = max(results[probe])
        bandwidth.append({"probe": probe, "bytes_per_s": best, "tensor_bytes": size})
    if vec_error and not results["vec_copy"]:
        bandwidth.append({"probe": "vec_copy", "bytes_per_s": None, "error": vec_error})

    matmul = []
    saved_tf32 = torch.backends.cuda.matmul.allow_tf32
    saved_prec = torch.get_float32_matmul_precision() if hasattr(torch, "get_float32_matmul_precision") else None
    try:
        probes = [("sgemm_fp32", torch.float32, False), ("tf32", torch.float32, True),
                  ("bf16", torch.bfloat16, None), ("fp16", torch.float16, None)]
        for probe, dtype, tf32 in probes:
            if probe == "tf32" and not device.is_cuda:
                continue
            best = None
            best_n = None
            err = None
            for n in _matmul_sizes(device):
                try:
                    if tf32 is not None:
                        torch.backends.cuda.matmul.allow_tf32 = tf32
                    x = torch.randn(n, n, device=dev).to(dtype)
                    y = torch.randn(n, n, device=dev).to(dtype)
                    ms = _time_ms(lambda: torch.mm(x, y), device, reps, warmup)
                    f = 2.0 * n * n * n / (ms / 1e3)
                    if best is None or f > best:
                        best, best_n = f, n
                    del x, y
                except Exception as e:  # noqa: BLE001
                    from .errors import classify

                    if classify(e)[1]:
                        raise
                    err = f"{type(e).__name__}: {e}"
            entry = {"probe": probe, "dtype": str(dtype).replace("torch.", ""), "flops_per_s": best,
                     "n": best_n}
            if best is None and err:
                entry["error"] = err
            matmul.append(entry)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved_tf32
        if saved_prec is not None:
            torch.set_float32_matmul_precision(saved_prec)
        device.empty_cache()
    return {"bandwidth": bandwidth, "matmul": matmul}
