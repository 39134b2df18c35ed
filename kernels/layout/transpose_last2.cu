// Transpose of the last two dims: out[..., b, a] = in[..., a, b], float32,
// both contiguous. The layout conversions of a channels-last replay run
// here: NCHW -> NHWC is [N, C, H*W] -> [N, H*W, C], NHWC -> NCHW the reverse.
//
// A block moves a TILE x TILE tile through shared memory (one padding
// column: conflict-free column reads), reading rows of `in` and writing rows
// of `out` with whole warps, so both sides are coalesced; ROWS threads deep,
// each thread moves TILE / ROWS elements. Leading dims go on gridDim.z
// (folded into one index when there are more than 65535).
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <stdint.h>

// Slot and knob lines stay one line each (kernels/README.md).
// clang-format off
// kopt:knob TILE 32 {32,64} tile side: 64 moves more per block (fewer blocks, more shared memory)
constexpr int TILE = 32;
// kopt:knob ROWS 8 {4,8,16} thread rows per block (block = 32 x ROWS threads): more rows, fewer elements per thread
constexpr int ROWS = 8;
// kopt:constraint TILE % ROWS == 0
// clang-format on

__global__ void __launch_bounds__(32 * ROWS)
    transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int A, int B,
                     int64_t planes) {
  __shared__ float tile[TILE][TILE + 1];
  const int64_t tiles_b = (B + TILE - 1) / TILE;
  const int a0 = blockIdx.y * TILE;
  const int b0 = (int)(blockIdx.x % tiles_b) * TILE;
  const int64_t plane = (int64_t)blockIdx.z * (gridDim.x / tiles_b) + blockIdx.x / tiles_b;
  if (plane >= planes) return;
  const float* src = in + plane * A * (int64_t)B;
  float* dst = out + plane * A * (int64_t)B;
  // Each warp row covers TILE columns, TILE / 32 per lane.
#pragma unroll
  for (int r = threadIdx.y; r < TILE; r += ROWS) {
#pragma unroll
    for (int c = threadIdx.x; c < TILE; c += 32) {
      const int a = a0 + r, b = b0 + c;
      if (a < A && b < B) tile[r][c] = __ldg(src + (int64_t)a * B + b);
    }
  }
  __syncthreads();
#pragma unroll
  for (int r = threadIdx.y; r < TILE; r += ROWS) {
#pragma unroll
    for (int c = threadIdx.x; c < TILE; c += 32) {
      const int b = b0 + r, a = a0 + c;
      if (a < A && b < B) dst[(int64_t)b * A + a] = tile[c][r];
    }
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const kopt_tensor &X = in[0], &Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  if (X.ndim < 2 || Y.ndim != X.ndim) return 4;
  const int64_t A = X.shape[X.ndim - 2], B = X.shape[X.ndim - 1];
  if (Y.shape[Y.ndim - 2] != B || Y.shape[Y.ndim - 1] != A) return 4;
  int64_t planes = 1;
  for (int d = 0; d + 2 < X.ndim; ++d) {
    if (Y.shape[d] != X.shape[d]) return 4;
    planes *= X.shape[d];
  }
  if (planes == 0 || A == 0 || B == 0) return 0;
  if (A > 0x7fffffffLL || B > 0x7fffffffLL) return 5;
  const int64_t tiles_a = (A + TILE - 1) / TILE, tiles_b = (B + TILE - 1) / TILE;
  if (tiles_a > 65535) return 5;
  // gridDim.x = tiles along B times as many planes as fit under 2^31 - 1;
  // gridDim.z carries the rest.
  int64_t per_x = 0x7fffffffLL / tiles_b;
  if (per_x > planes) per_x = planes;
  const int64_t z = (planes + per_x - 1) / per_x;
  if (z > 65535) return 5;
  dim3 grid((unsigned)(tiles_b * per_x), (unsigned)tiles_a, (unsigned)z);
  transpose_kernel<<<grid, dim3(32, ROWS), 0, (cudaStream_t)stream>>>(
      static_cast<const float*>(X.data), static_cast<float*>(Y.data), (int)A, (int)B, planes);
  return (int)cudaGetLastError();
}
