// Honest, unusual summation order for tasks/level1/10_sum_dim.py (sum over
// dim 1 of a contiguous (B, R, C...) tensor, keepdim): each thread keeps a
// Kahan-compensated sum over every 8th row, then the 8 partial sums of a
// column are combined by a tree in shared memory. The order differs from
// torch's and the result is more accurate than the fp32 reference: it must
// pass (calibration never fails a kernel for being closer to the truth).
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int kCols = 32;  // columns per block (one warp wide: coalesced rows)
constexpr int kRowGroups = 8;

__global__ void __launch_bounds__(kCols * kRowGroups)
kahan_tree_sum(const float* __restrict__ x, float* __restrict__ y, int64_t R, int64_t C) {
  __shared__ float part[kRowGroups][kCols];
  const int64_t b = blockIdx.y;
  const int64_t c = (int64_t)blockIdx.x * kCols + threadIdx.x;
  float sum = 0.f, comp = 0.f;
  if (c < C) {
    const float* p = x + b * R * C + c;
    for (int64_t r = threadIdx.y; r < R; r += kRowGroups) {
      float v = p[r * C] - comp;
      float t = sum + v;
      comp = (t - sum) - v;  // what the addition lost
      sum = t;
    }
  }
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  for (int half = kRowGroups / 2; half > 0; half /= 2) {
    if (threadIdx.y < half) part[threadIdx.y][threadIdx.x] += part[threadIdx.y + half][threadIdx.x];
    __syncthreads();
  }
  if (threadIdx.y == 0 && c < C) y[b * C + c] = part[0][threadIdx.x];
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  const kopt_tensor& x = in[0];
  if (n_in < 1 || n_out < 1 || x.dtype != KOPT_FLOAT32 || x.ndim < 2 || !kopt_is_contiguous(x)) return 1;
  int64_t B = x.shape[0], R = x.shape[1], C = 1;
  for (int d = 2; d < x.ndim; ++d) C *= x.shape[d];
  if (kopt_numel(out[0]) != B * C) return 2;
  if (B == 0 || C == 0) return 0;
  dim3 block(kCols, kRowGroups);
  dim3 grid((unsigned)((C + kCols - 1) / kCols), (unsigned)B);
  kahan_tree_sum<<<grid, block, 0, (cudaStream_t)stream>>>((const float*)x.data, (float*)out[0].data, R, C);
  return (int)cudaGetLastError();
}
