"""FLAW (host_overhead): y = 2x + 1, but the last 64 rows (2 MB) are
"handled separately" on the host every call: copied to the CPU (a blocking
device-to-host copy that waits for the GPU), computed there with torch's CPU
kernels, and copied back. One kernel launch per call; the GPU idles for the
copies and the host arithmetic (~1 ms against ~0.25 ms of kernel time).
Same result bit for bit: 2x is exact and x*2+1 rounds once on either side."""
import torch
import torch.nn as nn

import kopt

CUDA_SOURCE = r"""
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void __launch_bounds__(256)
axpb_body_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  const int64_t i = (int64_t)blockIdx.x * 256 + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    v.x = fmaf(v.x, 2.0f, 1.0f); v.y = fmaf(v.y, 2.0f, 1.0f);
    v.z = fmaf(v.z, 2.0f, 1.0f); v.w = fmaf(v.w, 2.0f, 1.0f);
    y[i] = v;
  }
}

__global__ void axpb_any(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fmaf(x[i], 2.0f, 1.0f);
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const int64_t n = kopt_numel(X);
  if (kopt_numel(Y) != n) return 4;
  if (n == 0) return 0;
  const float* xs = static_cast<const float*>(X.data);
  float* ys = static_cast<float*>(Y.data);
  cudaStream_t s = (cudaStream_t)stream;
  const bool aligned = ((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0;
  if (aligned && n % 4 == 0 && (n / 4 + 255) / 256 <= 0x7fffffffLL) {
    axpb_body_kernel<<<(unsigned)((n / 4 + 255) / 256), 256, 0, s>>>(
        reinterpret_cast<const float4*>(xs), reinterpret_cast<float4*>(ys), n / 4);
  } else {
    axpb_any<<<1024, 256, 0, s>>>(xs, ys, n);
  }
  return (int)cudaGetLastError();
}
"""

_k = kopt.load_cuda(CUDA_SOURCE, name="zoo_axpb_host_tail")

TAIL_ROWS = 64


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        body = max(x.shape[0] - TAIL_ROWS, 0)
        if body > 0:
            _k([x[:body]], [out[:body]])
        if body < x.shape[0]:
            tail = x[body:].cpu()                      # blocking device-to-host copy
            out[body:].copy_(tail * 2.0 + 1.0)         # host arithmetic, host-to-device copy
        return out
