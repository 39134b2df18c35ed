// torch.cumsum(x, dim=1) on a contiguous (R, N) fp32 tensor. One warp per
// row walks it in chunks of 128 elements (a float4 per lane): a serial scan
// of the lane's 4 values, a 5-step shuffle scan of the lane totals, plus the
// running carry of earlier chunks. U chunks are loaded before any is
// scanned, so each lane keeps several 16-byte loads in flight. Scalar
// variant (32-element chunks) when N % 4 != 0. The carry between chunks is
// kept in double and each output is rounded once, so the result is close to
// the exact prefix sum (within-chunk partials are fp32 over <= 128 values).
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

// kopt:knob U 4 {1,2,4,8,16} chunks of 128 loaded before any is scanned: more loads in flight, more registers
constexpr int U = 4;
// kopt:knob THREADS 256 32..1024*2 threads per block (one warp per row): rows per block
constexpr int THREADS = 256;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

__device__ __forceinline__ float warp_inclusive_scan(float v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float n = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += n;
  }
  return v;
}

__global__ void cumsum_vec4_kernel(const float* __restrict__ x, float* __restrict__ y,
                                   int64_t rows, int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (row >= rows) return;
  const float4* xr = reinterpret_cast<const float4*>(x + row * n);
  float4* yr = reinterpret_cast<float4*>(y + row * n);
  const int64_t n4 = n >> 2;
  double carry = 0.0;
  for (int64_t base = 0; base < n4; base += 32 * U) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + u * 32 + lane;
      v[u] = i < n4 ? xr[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float4 a = v[u];
      a.y += a.x; a.z += a.y; a.w += a.z;           // lane-local inclusive scan
      const float incl = warp_inclusive_scan(a.w, lane);
      float excl = __shfl_up_sync(0xffffffffu, incl, 1);
      if (lane == 0) excl = 0.f;
      float4 o;
      o.x = (float)(carry + (double)(excl + a.x)); o.y = (float)(carry + (double)(excl + a.y));
      o.z = (float)(carry + (double)(excl + a.z)); o.w = (float)(carry + (double)(excl + a.w));
      const int64_t i = base + u * 32 + lane;
      if (i < n4) yr[i] = o;
      carry += (double)__shfl_sync(0xffffffffu, incl, 31);
    }
  }
}

__global__ void cumsum_scalar_kernel(const float* __restrict__ x, float* __restrict__ y,
                                     int64_t rows, int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (row >= rows) return;
  const float* xr = x + row * n;
  float* yr = y + row * n;
  double carry = 0.0;
  for (int64_t base = 0; base < n; base += 32 * U) {
    float v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = base + u * 32 + lane;
      v[u] = i < n ? xr[i] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const float incl = warp_inclusive_scan(v[u], lane);
      const int64_t i = base + u * 32 + lane;
      if (i < n) yr[i] = (float)(carry + (double)incl);
      carry += (double)__shfl_sync(0xffffffffu, incl, 31);
    }
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32 || X.ndim != 2) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const int64_t rows = X.shape[0], n = X.shape[1];
  if (kopt_numel(Y) != rows * n) return 4;
  if (rows * n == 0) return 0;

  const float* xs = static_cast<const float*>(X.data);
  float* ys = static_cast<float*>(Y.data);
  const bool aligned = ((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0;
  const int threads = THREADS;  // THREADS / 32 rows per block
  const int64_t blocks = (rows * 32 + threads - 1) / threads;
  if (blocks > 0x7fffffffLL) return 5;
  cudaStream_t s = (cudaStream_t)stream;
  if (aligned && n % 4 == 0)
    cumsum_vec4_kernel<<<(unsigned)blocks, threads, 0, s>>>(xs, ys, rows, n);
  else
    cumsum_scalar_kernel<<<(unsigned)blocks, threads, 0, s>>>(xs, ys, rows, n);
  return (int)cudaGetLastError();
}
