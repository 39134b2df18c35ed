// Honest: a scratch buffer allocated once (kopt_init) and reused by every
// call, and a two-pass ReLU through it. Timed calls and checked calls do the
// same work.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

static float* scratch = nullptr;
static int64_t scratch_n = 0;

__global__ void pass1(const float* __restrict__ x, float* __restrict__ s, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    s[i] = fmaxf(x[i], 0.0f);
}
__global__ void pass2(const float* __restrict__ s, float* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = s[i];
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, cudaStream_t stream) {
  if (n_in < 1 || n_out < 1) return 1;
  int64_t n = 1;
  for (int i = 0; i < in[0].ndim; ++i) n *= in[0].shape[i];
  if (n > scratch_n) {
    if (scratch) cudaFree(scratch);
    if (cudaMalloc(&scratch, n * sizeof(float)) != cudaSuccess) return 3;
    scratch_n = n;
  }
  pass1<<<2048, 256, 0, stream>>>((const float*)in[0].data, scratch, n);
  pass2<<<2048, 256, 0, stream>>>(scratch, (float*)out[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
