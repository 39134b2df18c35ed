// torch.var_mean(x, dim=1) (unbiased variance): two outputs, out[0] = var,
// out[1] = mean. One block per row with the row in registers; the variance
// is an exact second pass over the registers around the mean.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

// kopt:knob THREADS 64 64..1024*2 threads per row: fewer float4s held per thread vs more warps to sync
constexpr int THREADS = 64;
// block_sum keeps one partial per warp and reduces them in one warp.
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024
constexpr int WARPS = THREADS / 32;

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
var_mean_reg_kernel(const float* __restrict__ x, float* __restrict__ var_out,
                    float* __restrict__ mean_out, int n) {
  __shared__ float red[WARPS];
  const int64_t row = blockIdx.x;
  const float4* xr = reinterpret_cast<const float4*>(x + row * n);
  const int n4 = n >> 2;
  float4 v[K];
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i = k * THREADS + threadIdx.x;
    if (i < n4) {
      v[k] = xr[i];
      s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
  }
  const float mean = block_sum(s, red) / (float)n;
  float q = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int i = k * THREADS + threadIdx.x;
    if (i < n4) {
      const float dx = v[k].x - mean, dy = v[k].y - mean, dz = v[k].z - mean, dw = v[k].w - mean;
      q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
    }
  }
  q = block_sum(q, red);
  if (threadIdx.x == 0) {
    mean_out[row] = mean;
    var_out[row] = n > 1 ? q / (float)(n - 1) : __int_as_float(0x7fc00000);  // NaN like torch
  }
}

__global__ void __launch_bounds__(THREADS)
var_mean_generic_kernel(const float* __restrict__ x, float* __restrict__ var_out,
                        float* __restrict__ mean_out, int64_t n) {
  __shared__ float red[WARPS];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * n;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += THREADS) s += xr[i];
  const float mean = block_sum(s, red) / (float)n;
  float q = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += THREADS) { const float d = xr[i] - mean; q += d * d; }
  q = block_sum(q, red);
  if (threadIdx.x == 0) {
    mean_out[row] = mean;
    var_out[row] = n > 1 ? q / (float)(n - 1) : __int_as_float(0x7fc00000);
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 1 || n_out != 2) return 1;  // x -> (var, mean)
  const kopt_tensor& X = in[0];
  kopt_tensor &V = out[0], &M = out[1];
  if (X.dtype != KOPT_FLOAT32 || V.dtype != KOPT_FLOAT32 || M.dtype != KOPT_FLOAT32) return 2;
  if (X.ndim != 2) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(V) || !kopt_is_contiguous(M)) return 3;
  const int64_t rows = X.shape[0], n = X.shape[1];
  if (kopt_numel(V) != rows || kopt_numel(M) != rows) return 4;
  if (rows == 0) return 0;
  if (rows > 0x7fffffffLL || n == 0) return 5;

  const float* xs = static_cast<const float*>(X.data);
  float* vs = static_cast<float*>(V.data);
  float* ms = static_cast<float*>(M.data);
  cudaStream_t s = (cudaStream_t)stream;
  const dim3 grid((unsigned)rows);
  if ((reinterpret_cast<uintptr_t>(xs) & 15) == 0 && n % 4 == 0 && n <= (int64_t)4 * THREADS * 8) {
    const int64_t per = (n / 4 + THREADS - 1) / THREADS;
    if (per <= 1)      var_mean_reg_kernel<1><<<grid, THREADS, 0, s>>>(xs, vs, ms, (int)n);
    else if (per <= 2) var_mean_reg_kernel<2><<<grid, THREADS, 0, s>>>(xs, vs, ms, (int)n);
    else if (per <= 4) var_mean_reg_kernel<4><<<grid, THREADS, 0, s>>>(xs, vs, ms, (int)n);
    else               var_mean_reg_kernel<8><<<grid, THREADS, 0, s>>>(xs, vs, ms, (int)n);
  } else {
    var_mean_generic_kernel<<<grid, THREADS, 0, s>>>(xs, vs, ms, n);
  }
  return (int)cudaGetLastError();
}
