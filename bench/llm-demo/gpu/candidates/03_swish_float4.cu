// Swish, x * sigmoid(x) = x / (1 + exp(-x)), in one pass: float4 loads and
// stores, one float4 per thread, block 0 does the scalar tail of numel % 4
// elements; a scalar grid-stride kernel when the pointers are not 16-byte
// aligned. Eager PyTorch runs two kernels (sigmoid, then the product).
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <stdint.h>

constexpr int THREADS = 256;

__device__ __forceinline__ float swish_one(float v) { return v / (1.0f + expf(-v)); }

__global__ void __launch_bounds__(THREADS)
    swish_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4,
                      const float* __restrict__ xs, float* __restrict__ ys, int64_t n) {
  const int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    v.x = swish_one(v.x);
    v.y = swish_one(v.y);
    v.z = swish_one(v.z);
    v.w = swish_one(v.w);
    y[i] = v;
  }
  if (blockIdx.x == 0) {
    const int64_t t = 4 * n4 + threadIdx.x;
    if (t < n) ys[t] = swish_one(xs[t]);
  }
}

__global__ void swish_scalar_kernel(const float* __restrict__ xs, float* __restrict__ ys,
                                    int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    ys[i] = swish_one(xs[i]);
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
  if (((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0) {
    const int64_t n4 = n / 4;
    const int64_t blocks = n4 > 0 ? (n4 + THREADS - 1) / THREADS : 1;
    if (blocks > 0x7fffffffLL) return 5;
    swish_vec4_kernel<<<(unsigned)blocks, THREADS, 0, s>>>(
        reinterpret_cast<const float4*>(xs), reinterpret_cast<float4*>(ys), n4, xs, ys, n);
  } else {
    swish_scalar_kernel<<<132 * 16, THREADS, 0, s>>>(xs, ys, n);
  }
  return (int)cudaGetLastError();
}
