"""Hybrid solution for level1/03_swish: a float4-vectorized CUDA kernel
for x * sigmoid(x), compiled with torch.utils.cpp_extension.load_inline
(KernelBench's usual style). Needs a CUDA build of torch, nvcc and ninja."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>

// kopt:knob THREADS 256 64..1024*2 threads per block
constexpr int THREADS = 256;
// kopt:knob BLOCKS_PER_SM 8 {1,2,4,8,16,32} grid cap in blocks per SM: more blocks or longer grid-stride loops
constexpr int BLOCKS_PER_SM = 8;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

__device__ __forceinline__ float swish1(float v) {
  return v / (1.0f + expf(-v));
}

__global__ void swish_kernel(const float* __restrict__ x, float* __restrict__ y,
                             int64_t n, bool vec) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if (vec) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    const int64_t n4 = n / 4;
    for (int64_t i = tid; i < n4; i += stride) {
      float4 v = x4[i];
      v.x = swish1(v.x); v.y = swish1(v.y); v.z = swish1(v.z); v.w = swish1(v.w);
      y4[i] = v;
    }
    done = n4 * 4;
  }
  for (int64_t i = done + tid; i < n; i += stride) y[i] = swish1(x[i]);
}

torch::Tensor swish_forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "swish_forward: x must be a CUDA tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "swish_forward: x must be float32");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel();
  if (n == 0) return y;
  const float* xp = xc.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const bool vec = ((reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(yp)) & 15) == 0;
  const int threads = THREADS;
  const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  int64_t blocks = ((vec ? n / 4 : n) + threads - 1) / threads;
  if (blocks > (int64_t)sms * BLOCKS_PER_SM) blocks = (int64_t)sms * BLOCKS_PER_SM;
  if (blocks < 1) blocks = 1;
  swish_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(xp, yp, n, vec);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

CPP_SOURCE = "torch::Tensor swish_forward(torch::Tensor x);"

_ext = load_inline(
    name="kopt_tasks_level1_swish",
    cpp_sources=CPP_SOURCE,
    cuda_sources=CUDA_SOURCE,
    functions=["swish_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.swish_forward(x)
