// Row softmax over the last dim: one block per row, the row held in
// registers (each thread owns K float4s, so x is read from HBM exactly once),
// max and sum reduced with warp shuffles plus a tiny shared-memory step.
// Fallback for rows that do not fit or are not float4-able: a 3-pass kernel.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

// kopt:knob THREADS 512 64..1024*2 threads per row: fewer float4s held per thread vs more warps to sync
constexpr int THREADS = 512;
// block_max/block_sum keep one partial per warp and reduce them in one warp.
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024
constexpr int WARPS = THREADS / 32;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Every thread of the block gets the result.
__device__ __forceinline__ float block_max(float v, float* red) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  v = warp_max(v);
  __syncthreads();  // red may still be read from a previous reduction
  if (lane == 0) red[w] = v;
  __syncthreads();
  v = lane < WARPS ? red[lane] : -INFINITY;
  return warp_max(v);
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
softmax_reg_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ float red[WARPS];
  const int64_t row = blockIdx.x;
  const float4* xr = reinterpret_cast<const float4*>(x + row * n);
  float4* yr = reinterpret_cast<float4*>(y + row * n);
  const int n4 = n >> 2;
  float4 v[K];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i = k * THREADS + threadIdx.x;
    if (i < n4) {
      v[k] = xr[i];
      m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
    }
  }
  m = block_max(m, red);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i = k * THREADS + threadIdx.x;
    if (i < n4) {
      v[k].x = expf(v[k].x - m); v[k].y = expf(v[k].y - m);
      v[k].z = expf(v[k].z - m); v[k].w = expf(v[k].w - m);
      s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
  }
  s = block_sum(s, red);
  const float inv = 1.0f / s;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i = k * THREADS + threadIdx.x;
    if (i < n4) {
      float4 o = v[k];
      o.x *= inv; o.y *= inv; o.z *= inv; o.w *= inv;
      yr[i] = o;
    }
  }
}

// Generic: any n, any alignment. Reads the row three times (L2 helps).
__global__ void __launch_bounds__(THREADS)
softmax_generic_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  __shared__ float red[WARPS];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * n;
  float* yr = y + row * n;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += THREADS) m = fmaxf(m, xr[i]);
  m = block_max(m, red);
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += THREADS) s += expf(xr[i] - m);
  s = block_sum(s, red);
  const float inv = 1.0f / s;
  for (int64_t i = threadIdx.x; i < n; i += THREADS) yr[i] = expf(xr[i] - m) * inv;
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32 || X.ndim < 1) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const int64_t total = kopt_numel(X);
  if (kopt_numel(Y) != total) return 4;
  const int64_t n = X.shape[X.ndim - 1];  // softmax over the last dim
  if (total == 0) return 0;
  if (n == 0) return 0;
  const int64_t rows = total / n;
  if (rows > 0x7fffffffLL) return 5;

  const float* xs = static_cast<const float*>(X.data);
  float* ys = static_cast<float*>(Y.data);
  const bool aligned = ((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0;
  cudaStream_t s = (cudaStream_t)stream;
  const dim3 grid((unsigned)rows);
  if (aligned && n % 4 == 0 && n <= (int64_t)4 * THREADS * 16) {
    const int64_t per = (n / 4 + THREADS - 1) / THREADS;  // float4s per thread
    if (per <= 1)      softmax_reg_kernel<1><<<grid, THREADS, 0, s>>>(xs, ys, (int)n);
    else if (per <= 2) softmax_reg_kernel<2><<<grid, THREADS, 0, s>>>(xs, ys, (int)n);
    else if (per <= 4) softmax_reg_kernel<4><<<grid, THREADS, 0, s>>>(xs, ys, (int)n);
    else if (per <= 8) softmax_reg_kernel<8><<<grid, THREADS, 0, s>>>(xs, ys, (int)n);
    else               softmax_reg_kernel<16><<<grid, THREADS, 0, s>>>(xs, ys, (int)n);
  } else {
    softmax_generic_kernel<<<grid, THREADS, 0, s>>>(xs, ys, n);
  }
  return (int)cudaGetLastError();
}
