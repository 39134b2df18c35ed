// FLAW (dram_at_roof, with excess bytes): y = 2x + 1 as two passes of one
// generic affine kernel: y = 2x, then y = 1*y + 1. The intermediate makes a
// round trip through DRAM: 2 GB moved where 1 GB is needed. Same result
// bit for bit (2x is exact; the second pass rounds 2x + 1 once).
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
affine_vec4(const float4* x, float4* y, int64_t n4, float a, float b) {
  const int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    v.x = fmaf(v.x, a, b); v.y = fmaf(v.y, a, b); v.z = fmaf(v.z, a, b); v.w = fmaf(v.w, a, b);
    y[i] = v;
  }
}

__global__ void affine_any(const float* x, float* y, int64_t n, float a, float b) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = fmaf(x[i], a, b);
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
  if (((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0 && n % 4 == 0) {
    const int64_t n4 = n / 4;
    int64_t blocks = (n4 + kThreads - 1) / kThreads;
    if (blocks < 1) blocks = 1;
    // Pass 1: y = 2x. Pass 2: y = y + 1 (reads back what pass 1 wrote).
    affine_vec4<<<(unsigned)blocks, kThreads, 0, s>>>(reinterpret_cast<const float4*>(xs),
        reinterpret_cast<float4*>(ys), n4, 2.0f, 0.0f);
    affine_vec4<<<(unsigned)blocks, kThreads, 0, s>>>(reinterpret_cast<const float4*>(ys),
        reinterpret_cast<float4*>(ys), n4, 1.0f, 1.0f);
  } else {
    affine_any<<<1024, 256, 0, s>>>(xs, ys, n, 2.0f, 0.0f);
    affine_any<<<1024, 256, 0, s>>>(ys, ys, n, 1.0f, 1.0f);
  }
  return (int)cudaGetLastError();
}
