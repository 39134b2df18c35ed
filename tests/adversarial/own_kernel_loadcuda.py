# Honest under a contract that forbids torch operators: ReLU in its own CUDA
# kernel, built with kopt.load_cuda and called through the kopt ABI. The only
# torch operator it calls is the output's allocation (aten::empty_like),
# which the contract allows; the kernel itself never reaches the dispatcher.
import torch
import torch.nn as nn

import kopt

_SRC = r"""
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void relu(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = x[i];
    y[i] = (v != v) ? v : fmaxf(v, 0.0f);
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  if (n_in < 1 || n_out < 1 || !kopt_is_contiguous(in[0])) return 1;
  int64_t n = kopt_numel(in[0]);
  if (n == 0) return 0;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 1048576) blocks = 1048576;
  relu<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>((const float*)in[0].data, (float*)out[0].data, n);
  return (int)cudaGetLastError();
}
"""

_relu = kopt.load_cuda(_SRC, name="adversarial_own_relu")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        _relu([x], [y])
        return y
