// Honest: exact (erf) GELU for tasks/level1/02_gelu.py, whose element count
// (8191 x 16381) is odd. A grid-stride loop moves float4s; a second, tiny
// launch does the scalar tail (numel % 4 elements); unaligned pointers take
// the scalar path for everything. Every element is written exactly once.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f)); }

__global__ void gelu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = x[i];
    v.x = gelu(v.x);
    v.y = gelu(v.y);
    v.z = gelu(v.z);
    v.w = gelu(v.w);
    y[i] = v;
  }
}

__global__ void gelu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t end) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = begin + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride) y[i] = gelu(x[i]);
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  if (n_in < 1 || n_out < 1 || in[0].dtype != KOPT_FLOAT32 || !kopt_is_contiguous(in[0])) return 1;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  const int64_t n = kopt_numel(in[0]);
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  const int threads = 256;
  int64_t done = 0;
  if ((((uintptr_t)x | (uintptr_t)y) & 15) == 0) {
    const int64_t n4 = n / 4;
    if (n4 > 0) {
      int64_t blocks = (n4 + threads - 1) / threads;
      if (blocks > 65535LL * 16) blocks = 65535LL * 16;  // grid-stride covers the rest
      gelu_vec4<<<(unsigned)blocks, threads, 0, s>>>((const float4*)x, (float4*)y, n4);
    }
    done = 4 * n4;
  }
  if (done < n) {
    int64_t blocks = (n - done + threads - 1) / threads;
    if (blocks > 65535LL * 16) blocks = 65535LL * 16;
    gelu_scalar<<<(unsigned)blocks, threads, 0, s>>>(x, y, done, n);
  }
  return (int)cudaGetLastError();
}
