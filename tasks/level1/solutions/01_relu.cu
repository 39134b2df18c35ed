// ReLU: float4-vectorized grid-stride loop; scalar tail for the last
// numel % 4 elements (and a scalar path if the pointers are not 16-byte aligned).
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ float relu1(float v) {
  return (v != v) ? v : fmaxf(v, 0.0f);  // keep NaN like torch.relu
}

__global__ void relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y,
                                 int64_t n4, const float* __restrict__ xs,
                                 float* __restrict__ ys, int64_t n) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < n4; i += stride) {
    float4 v = x[i];
    v.x = relu1(v.x); v.y = relu1(v.y); v.z = relu1(v.z); v.w = relu1(v.w);
    y[i] = v;
  }
  // tail: elements [4*n4, n)
  for (int64_t i = 4 * n4 + tid; i < n; i += stride) ys[i] = relu1(xs[i]);
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
  const bool aligned = ((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0;
  const int64_t n4 = aligned ? n / 4 : 0;

  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int threads = 256;
  const int64_t work = n4 > 0 ? n4 : n;
  int64_t blocks = (work + threads - 1) / threads;
  const int64_t max_blocks = (int64_t)sms * 8;  // 2048 resident threads per SM
  if (blocks > max_blocks) blocks = max_blocks;
  relu_vec4_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(
      reinterpret_cast<const float4*>(xs), reinterpret_cast<float4*>(ys), n4, xs, ys, n);
  return (int)cudaGetLastError();
}
