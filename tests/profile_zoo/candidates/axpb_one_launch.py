"""GOOD (hybrid): y = 2x + 1 as one float4 kernel over the whole tensor,
called once per forward through kopt.load_cuda. The hybrid counterpart of
axpb_slabs.py and axpb_host_tail.py: one launch, no host work, no sync."""
import torch
import torch.nn as nn

import kopt

CUDA_SOURCE = r"""
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void __launch_bounds__(256)
axpb_one_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
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
    axpb_one_kernel<<<(unsigned)((n / 4 + 255) / 256), 256, 0, s>>>(
        reinterpret_cast<const float4*>(xs), reinterpret_cast<float4*>(ys), n / 4);
  } else {
    axpb_any<<<1024, 256, 0, s>>>(xs, ys, n);
  }
  return (int)cudaGetLastError();
}
"""

_k = kopt.load_cuda(CUDA_SOURCE, name="zoo_axpb_one_launch")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _k([x], [out])
        return out
