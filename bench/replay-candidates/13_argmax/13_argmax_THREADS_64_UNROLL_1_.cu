// torch.argmax(x, dim=1) for a contiguous (R, N) fp32 tensor -> int64 (R).
// One warp per row, float4 loads, (value, index) pairs combined with warp
// shuffles. Ties go to the lowest index and NaN counts as the maximum, as
// in torch.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

// kopt:knob THREADS 64 64..1024*2 threads per block (one warp per row): rows per block
constexpr int THREADS = 64;
// kopt:knob UNROLL 1 {1,2,4,8} unroll of the float4 loop over a row: more loads in flight, more registers
constexpr int UNROLL = 1;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

// true when (a, ai) should win over (b, bi)
__device__ __forceinline__ bool better(float a, int64_t ai, float b, int64_t bi) {
  const bool an = a != a, bn = b != b;
  if (an || bn) return an && (!bn || ai < bi);
  return a > b || (a == b && ai < bi);
}

template <bool VEC>
__global__ void argmax_warp_kernel(const float* __restrict__ x, int64_t* __restrict__ y,
                                   int64_t rows, int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (row >= rows) return;  // whole warp leaves together
  const float* xr = x + row * n;
  float best = -INFINITY;
  int64_t bi = n;  // sentinel larger than any index
  if (VEC) {
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const int64_t n4 = n >> 2;
#pragma unroll UNROLL
    for (int64_t i = lane; i < n4; i += 32) {
      const float4 v = x4[i];
      const int64_t j = 4 * i;
      if (better(v.x, j, best, bi)) { best = v.x; bi = j; }
      if (better(v.y, j + 1, best, bi)) { best = v.y; bi = j + 1; }
      if (better(v.z, j + 2, best, bi)) { best = v.z; bi = j + 2; }
      if (better(v.w, j + 3, best, bi)) { best = v.w; bi = j + 3; }
    }
  } else {
    for (int64_t i = lane; i < n; i += 32) {
      const float v = xr[i];
      if (better(v, i, best, bi)) { best = v; bi = i; }
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
    const int64_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (better(ov, oi, best, bi)) { best = ov; bi = oi; }
  }
  if (lane == 0) y[row] = bi < n ? bi : 0;  // all -inf row: index 0 like torch
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_INT64 || X.ndim != 2) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const int64_t rows = X.shape[0], n = X.shape[1];
  if (kopt_numel(Y) != rows) return 4;
  if (rows == 0) return 0;
  if (n == 0) return 5;

  const float* xs = static_cast<const float*>(X.data);
  int64_t* ys = static_cast<int64_t*>(Y.data);
  const int threads = THREADS;  // THREADS / 32 rows per block
  const int64_t blocks = (rows * 32 + threads - 1) / threads;
  if (blocks > 0x7fffffffLL) return 5;
  cudaStream_t s = (cudaStream_t)stream;
  if ((reinterpret_cast<uintptr_t>(xs) & 15) == 0 && n % 4 == 0)
    argmax_warp_kernel<true><<<(unsigned)blocks, threads, 0, s>>>(xs, ys, rows, n);
  else
    argmax_warp_kernel<false><<<(unsigned)blocks, threads, 0, s>>>(xs, ys, rows, n);
  return (int)cudaGetLastError();
}
