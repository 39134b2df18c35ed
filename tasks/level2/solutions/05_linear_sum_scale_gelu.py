"""Hybrid solution for level2/05_linear_sum_scale_gelu: algebraic folding.
sum_j (x W^T + b)_j = x . (sum_j W_j) + sum_j b_j, so the (B, N) GEMM
collapses to a matrix-vector product. The column sums of W and the bias sum
are computed with torch each call (one 256 MB read of W, so weight updates
are honoured), then one warp-per-row kernel (kopt.load_cuda, kopt ABI) does
the dot product, adds the bias sum, scales and applies GELU.
About 2*B*K*N FLOPs become about N*K + 2*B*K."""
import torch
import torch.nn as nn

import kopt

CUDA_SOURCE = r"""
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

// in: x (B, K), wsum (K), bsum (1), scale (1) (all device fp32)
// out: gelu((x . wsum + bsum) * scale), (B, 1)
__device__ __forceinline__ float gelu1(float v) {
  return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
}

// kopt:knob THREADS 256 64..1024*2 threads per block (one warp per row): rows per block
constexpr int THREADS = 256;
// kopt:knob UNROLL 8 {1,2,4,8,16} unroll of the float4 dot-product loop: more loads in flight, more registers
constexpr int UNROLL = 8;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

template <bool VEC>
__global__ void __launch_bounds__(THREADS)
folded_kernel(const float* __restrict__ x, const float* __restrict__ w,
              const float* __restrict__ bsum, const float* __restrict__ scale,
              float* __restrict__ out, int64_t B, int64_t K) {
  const int lane = threadIdx.x & 31;
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (row >= B) return;
  const float* xr = x + row * K;
  float acc;
  if (VEC) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll UNROLL
    for (int64_t i = lane; i < K / 4; i += 32) {
      const float4 p = x4[i], q = __ldg(w4 + i);
      s.x = fmaf(p.x, q.x, s.x); s.y = fmaf(p.y, q.y, s.y);
      s.z = fmaf(p.z, q.z, s.z); s.w = fmaf(p.w, q.w, s.w);
    }
    acc = (s.x + s.y) + (s.z + s.w);
  } else {
    acc = 0.f;
    for (int64_t i = lane; i < K; i += 32) acc = fmaf(xr[i], __ldg(w + i), acc);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) out[row] = gelu1((acc + *bsum) * *scale);
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 4 || n_out != 1) return 1;
  const kopt_tensor &X = in[0], &W = in[1], &Bs = in[2], &S = in[3];
  kopt_tensor& O = out[0];
  if (X.dtype != KOPT_FLOAT32 || W.dtype != KOPT_FLOAT32 || Bs.dtype != KOPT_FLOAT32 ||
      S.dtype != KOPT_FLOAT32 || O.dtype != KOPT_FLOAT32 || X.ndim != 2)
    return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(W) || !kopt_is_contiguous(O)) return 3;
  const int64_t B = X.shape[0], K = X.shape[1];
  if (kopt_numel(W) != K || kopt_numel(Bs) != 1 || kopt_numel(S) != 1 || kopt_numel(O) != B)
    return 4;
  if (B == 0) return 0;
  const uintptr_t a = reinterpret_cast<uintptr_t>(X.data) | reinterpret_cast<uintptr_t>(W.data);
  const int threads = THREADS;
  const int64_t blocks = (B * 32 + threads - 1) / threads;
  cudaStream_t s = (cudaStream_t)stream;
  const float* xs = static_cast<const float*>(X.data);
  const float* ws = static_cast<const float*>(W.data);
  const float* bp = static_cast<const float*>(Bs.data);
  const float* sp = static_cast<const float*>(S.data);
  float* os = static_cast<float*>(O.data);
  if ((a & 15) == 0 && K % 4 == 0)
    folded_kernel<true><<<(unsigned)blocks, threads, 0, s>>>(xs, ws, bp, sp, os, B, K);
  else
    folded_kernel<false><<<(unsigned)blocks, threads, 0, s>>>(xs, ws, bp, sp, os, B, K);
  return (int)cudaGetLastError();
}
"""

_k = kopt.load_cuda(CUDA_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # same parameters as Model
        self.scaling_factor = scaling_factor
        self._scale = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._scale is None or self._scale.device != x.device:
            self._scale = torch.full((1,), float(self.scaling_factor), dtype=torch.float32,
                                     device=x.device)
        wsum = self.linear.weight.sum(dim=0)          # (in_features,)
        bsum = self.linear.bias.sum().reshape(1)      # (1,)
        out = torch.empty(x.shape[0], 1, dtype=x.dtype, device=x.device)
        _k([x.contiguous(), wsum, bsum, self._scale], [out])
        return out
