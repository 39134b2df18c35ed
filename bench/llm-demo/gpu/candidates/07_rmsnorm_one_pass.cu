// The shipped solution (tasks/level1/solutions/07_rmsnorm.cu): one block per
// row holds the row in registers as float4s, so x is read once.
// RMSNorm over the last dim: y = x * rsqrt(mean(x^2) + eps) * weight
// (inputs: x, weight). One block per row, the row held in registers so x is
// read once. eps = 1e-6, the value the task's get_init_inputs() passes
// (constructor arguments are not visible through the ABI).
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

// kopt:knob THREADS 256 64..1024*2 threads per row: fewer float4s held per thread vs more warps to sync
constexpr int THREADS = 256;
// block_sum keeps one partial per warp and reduces them in one warp.
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024
constexpr int WARPS = THREADS / 32;
constexpr float EPS = 1e-6f;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float block_sum(float v, float* red) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) red[w] = v;
  __syncthreads();
  v = lane < WARPS ? red[lane] : 0.0f;
  return warp_sum(v);
}

template <int K>
__global__ void __launch_bounds__(THREADS)
rmsnorm_reg_kernel(const float* __restrict__ x, const float* __restrict__ w,
                   float* __restrict__ y, int n) {
  __shared__ float red[WARPS];
  const int64_t row = blockIdx.x;
  const float4* xr = reinterpret_cast<const float4*>(x + row * n);
  float4* yr = reinterpret_cast<float4*>(y + row * n);
  const float4* w4 = reinterpret_cast<const float4*>(w);
  const int n4 = n >> 2;
  float4 v[K];
  float q = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i = k * THREADS + threadIdx.x;
    if (i < n4) {
      v[k] = xr[i];
      q += (v[k].x * v[k].x + v[k].y * v[k].y) + (v[k].z * v[k].z + v[k].w * v[k].w);
    }
  }
  const float r = rsqrtf(block_sum(q, red) / (float)n + EPS);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i = k * THREADS + threadIdx.x;
    if (i < n4) {
      const float4 ww = w4[i];
      float4 o;
      o.x = v[k].x * r * ww.x; o.y = v[k].y * r * ww.y;
      o.z = v[k].z * r * ww.z; o.w = v[k].w * r * ww.w;
      yr[i] = o;
    }
  }
}

__global__ void __launch_bounds__(THREADS)
rmsnorm_generic_kernel(const float* __restrict__ x, const float* __restrict__ w,
                       float* __restrict__ y, int64_t n) {
  __shared__ float red[WARPS];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * n;
  float* yr = y + row * n;
  float q = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += THREADS) q += xr[i] * xr[i];
  const float r = rsqrtf(block_sum(q, red) / (float)n + EPS);
  for (int64_t i = threadIdx.x; i < n; i += THREADS) yr[i] = xr[i] * r * w[i];
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 2 || n_out != 1) return 1;  // x, weight
  const kopt_tensor &X = in[0], &W = in[1];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || W.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(W) || !kopt_is_contiguous(Y)) return 3;
  if (X.ndim < 1) return 2;
  const int64_t total = kopt_numel(X);
  const int64_t n = X.shape[X.ndim - 1];
  if (kopt_numel(Y) != total || kopt_numel(W) != n) return 4;
  if (total == 0 || n == 0) return 0;
  const int64_t rows = total / n;
  if (rows > 0x7fffffffLL) return 5;

  const float* xs = static_cast<const float*>(X.data);
  const float* ws = static_cast<const float*>(W.data);
  float* ys = static_cast<float*>(Y.data);
  const uintptr_t addr_or = reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys) |
                            reinterpret_cast<uintptr_t>(ws);
  cudaStream_t s = (cudaStream_t)stream;
  const dim3 grid((unsigned)rows);
  if ((addr_or & 15) == 0 && n % 4 == 0 && n <= (int64_t)4 * THREADS * 8) {
    const int64_t per = (n / 4 + THREADS - 1) / THREADS;
    if (per <= 1)      rmsnorm_reg_kernel<1><<<grid, THREADS, 0, s>>>(xs, ws, ys, (int)n);
    else if (per <= 2) rmsnorm_reg_kernel<2><<<grid, THREADS, 0, s>>>(xs, ws, ys, (int)n);
    else if (per <= 4) rmsnorm_reg_kernel<4><<<grid, THREADS, 0, s>>>(xs, ws, ys, (int)n);
    else               rmsnorm_reg_kernel<8><<<grid, THREADS, 0, s>>>(xs, ws, ys, (int)n);
  } else {
    rmsnorm_generic_kernel<<<grid, THREADS, 0, s>>>(xs, ws, ys, n);
  }
  return (int)cudaGetLastError();
}
