"""Hybrid solution for level2/02_conv2d_relu_biasadd: keep the convolution
in cuDNN (F.conv2d with the same weight and bias) and fuse ReLU + the
per-channel bias add into one float4 pass (kopt.load_cuda, kopt ABI).
Replaces two elementwise passes (relu, add) over the conv output with one."""
import torch
import torch.nn as nn
import torch.nn.functional as F

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

// in: y (N, C, H, W) conv output, bias (C,1,1); out: relu(y) + bias[c]
__device__ __forceinline__ float relu1(float v) { return (v != v) ? v : fmaxf(v, 0.0f); }

__global__ void relu_bias_kernel(const float* __restrict__ y, const float* __restrict__ bias,
                                 float* __restrict__ out, int64_t total, int64_t C, int64_t HW,
                                 bool vec) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (vec) {  // HW % 4 == 0: the 4 lanes of a float4 share one channel
    const int64_t n4 = total / 4, HW4 = HW / 4;
    const float4* y4 = reinterpret_cast<const float4*>(y);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (int64_t i = tid; i < n4; i += stride) {
      const float b = __ldg(bias + (i / HW4) % C);
      float4 v = y4[i];
      v.x = relu1(v.x) + b; v.y = relu1(v.y) + b; v.z = relu1(v.z) + b; v.w = relu1(v.w) + b;
      o4[i] = v;
    }
  } else {
    for (int64_t i = tid; i < total; i += stride) out[i] = relu1(y[i]) + __ldg(bias + (i / HW) % C);
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 2 || n_out != 1) return 1;
  const kopt_tensor &Y = in[0], &B = in[1];
  kopt_tensor& O = out[0];
  if (Y.dtype != KOPT_FLOAT32 || B.dtype != KOPT_FLOAT32 || O.dtype != KOPT_FLOAT32 || Y.ndim != 4)
    return 2;
  if (!kopt_is_contiguous(Y) || !kopt_is_contiguous(B) || !kopt_is_contiguous(O)) return 3;
  const int64_t C = Y.shape[1], HW = Y.shape[2] * Y.shape[3];
  const int64_t total = kopt_numel(Y);
  if (kopt_numel(B) != C || kopt_numel(O) != total) return 4;
  if (total == 0) return 0;
  const uintptr_t a = reinterpret_cast<uintptr_t>(Y.data) | reinterpret_cast<uintptr_t>(O.data);
  const bool vec = (a & 15) == 0 && HW % 4 == 0;
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int threads = THREADS;
  int64_t blocks = ((vec ? total / 4 : total) + threads - 1) / threads;
  if (blocks > (int64_t)sms * BLOCKS_PER_SM) blocks = (int64_t)sms * BLOCKS_PER_SM;
  relu_bias_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(
      static_cast<const float*>(Y.data), static_cast<const float*>(B.data),
      static_cast<float*>(O.data), total, C, HW, vec);
  return (int)cudaGetLastError();
}
"""

_k = kopt.load_cuda(CUDA_SOURCE)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape):
        super().__init__()
        # Same parameters, created in the same order as the reference Model.
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        out = torch.empty_like(y)
        _k([y, self.bias], [out])
        return out
