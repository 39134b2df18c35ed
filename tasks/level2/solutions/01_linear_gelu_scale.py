"""Hybrid solution for level2/01_linear_gelu_scale: keep the GEMM in
cuBLAS (torch.mm without bias) and fuse bias-add + exact GELU + scaling
into one float4 pass over the GEMM output (kopt.load_cuda, kopt ABI).
Replaces: addmm, then gelu (read+write), then mul (read+write)."""
import torch
import torch.nn as nn

import kopt

CUDA_SOURCE = r"""
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

// kopt:knob THREADS 256 64..1024*2 threads per block
constexpr int THREADS = 256;
// kopt:knob BLOCKS_PER_SM 8 {1,2,4,8,16,32} grid cap in blocks per SM: more blocks or longer grid-stride loops
constexpr int BLOCKS_PER_SM = 8;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

// in: y (M, N) GEMM output, bias (N), scale (1 element, device)
// out: gelu(y + bias) * scale, (M, N)
__device__ __forceinline__ float gelu1(float v) {
  return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
}

__global__ void bias_gelu_scale_kernel(const float* __restrict__ y, const float* __restrict__ bias,
                                       const float* __restrict__ scale_p, float* __restrict__ out,
                                       int64_t M, int64_t N, bool vec) {
  const float scale = *scale_p;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (vec) {  // N % 4 == 0: a float4 never straddles a row
    const int64_t n4 = M * N / 4, N4 = N / 4;
    const float4* y4 = reinterpret_cast<const float4*>(y);
    const float4* b4 = reinterpret_cast<const float4*>(bias);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (int64_t i = tid; i < n4; i += stride) {
      const float4 v = y4[i];
      const float4 b = __ldg(b4 + (i % N4));
      float4 r;
      r.x = gelu1(v.x + b.x) * scale; r.y = gelu1(v.y + b.y) * scale;
      r.z = gelu1(v.z + b.z) * scale; r.w = gelu1(v.w + b.w) * scale;
      o4[i] = r;
    }
  } else {
    const int64_t n = M * N;
    for (int64_t i = tid; i < n; i += stride) out[i] = gelu1(y[i] + __ldg(bias + (i % N))) * scale;
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 3 || n_out != 1) return 1;
  const kopt_tensor &Y = in[0], &B = in[1], &S = in[2];
  kopt_tensor& O = out[0];
  if (Y.dtype != KOPT_FLOAT32 || B.dtype != KOPT_FLOAT32 || S.dtype != KOPT_FLOAT32 ||
      O.dtype != KOPT_FLOAT32 || Y.ndim != 2)
    return 2;
  if (!kopt_is_contiguous(Y) || !kopt_is_contiguous(B) || !kopt_is_contiguous(O)) return 3;
  const int64_t M = Y.shape[0], N = Y.shape[1];
  if (kopt_numel(B) != N || kopt_numel(S) != 1 || kopt_numel(O) != M * N) return 4;
  if (M * N == 0) return 0;
  const uintptr_t a = reinterpret_cast<uintptr_t>(Y.data) | reinterpret_cast<uintptr_t>(B.data) |
                      reinterpret_cast<uintptr_t>(O.data);
  const bool vec = (a & 15) == 0 && N % 4 == 0;
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int threads = THREADS;
  int64_t blocks = ((vec ? M * N / 4 : M * N) + threads - 1) / threads;
  if (blocks > (int64_t)sms * BLOCKS_PER_SM) blocks = (int64_t)sms * BLOCKS_PER_SM;
  bias_gelu_scale_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(
      static_cast<const float*>(Y.data), static_cast<const float*>(B.data),
      static_cast<const float*>(S.data), static_cast<float*>(O.data), M, N, vec);
  return (int)cudaGetLastError();
}
"""

_k = kopt.load_cuda(CUDA_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # same parameters as Model
        self.scaling_factor = scaling_factor
        self._scale = None  # device copy of scaling_factor (not a buffer: state_dict matches Model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._scale is None or self._scale.device != x.device:
            self._scale = torch.full((1,), float(self.scaling_factor), dtype=torch.float32,
                                     device=x.device)
        y = torch.mm(x.contiguous(), self.linear.weight.t())  # cuBLAS SGEMM, no bias
        out = torch.empty_like(y)
        _k([y, self.linear.bias, self._scale], [out])
        return out
