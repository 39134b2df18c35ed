// Transpose of the last two dims: out[..., b, a] = in[..., a, b], float32,
// both contiguous. The layout conversions of a channels-last replay run
// here: NCHW -> NHWC is [N, C, H*W] -> [N, H*W, C], NHWC -> NCHW the reverse.
//
// Two kernels (knob VEC):
//   VEC 1  a block moves a TILE x TILE tile through shared memory (one
//          padding column: conflict-free column reads), reading rows of `in`
//          and writing rows of `out` with whole warps, so both sides are
//          coalesced; ROWS threads deep, each thread moves TILE / ROWS
//          elements per row pass;
//   VEC 4  a block moves a TILE (a) x TB (b) tile: `in` is read as float4
//          in the tile's flattened order (a tile as wide as `in`'s rows is one
//          contiguous span), the values land transposed in shared memory,
//          and `out`'s rows of TILE go out a warp-row at a time. More bytes
//          in flight per thread (TILE * TB / (32 * ROWS) elements) and, with
//          TILE = the out row's length (NCHW -> NHWC at 64 channels), one
//          contiguous span written per block. Needs B % 4 == 0 and a 16-byte
//          aligned `in`; otherwise VEC 1 runs.
// A short side (a or b at most NARROW: an image's 3 channels) wastes most of
// a square tile, and its rows of out are too short to coalesce: there a
// block takes NT = 32 * ROWS positions along the long side with the whole
// short side, a contiguous span of the short-rowed tensor, staged in shared
// memory (narrow_a: in [A small][B], out rows of A; narrow_b: in rows of B
// small, out [B small][A]).
// Leading dims go on gridDim.z (folded into one index when there are more
// than 65535).
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <stdint.h>

// Slot and knob lines stay one line each (kernels/README.md).
// clang-format off
// kopt:knob TILE 32 {32,64} tile side along a (VEC 1: both sides): 64 moves more per block (fewer blocks, more shared memory)
constexpr int TILE = 32;
// kopt:knob ROWS 8 {4,8,16} thread rows per block (block = 32 x ROWS threads): more rows, fewer elements per thread
constexpr int ROWS = 8;
// kopt:knob VEC 4 {1,4} 4 float4 reads of `in` and TILE x TB tiles; 1 scalar TILE x TILE tiles
constexpr int VEC = 4;
// kopt:knob TB 64 {32,64,128} VEC 4: the tile's extent along in's rows (b), a multiple of 4
constexpr int TB = 64;
// kopt:knob NARROW 16 {0,8,16} the longest short side (a or b) the narrow kernels take; 0 never
constexpr int NARROW = 16;
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

// VEC 4: the tile [TILE a-rows][TB b-cols] of `in`. Reads: float4 q of the
// tile's TILE * TB / 4 goes to thread q % threads (consecutive threads,
// consecutive 16 bytes of a row). Shared memory holds the tile transposed,
// t[b][a] (a padding column: out-row reads are conflict-free; the
// transposed stores conflict at most 4 ways). Writes: element j of the
// TB x TILE out tile to thread j % threads, a along lanes.
constexpr int VT = 32 * ROWS;  // threads per block
__global__ void __launch_bounds__(VT)
    transpose_vec4(const float* __restrict__ in, float* __restrict__ out, int A, int B,
                   int64_t planes) {
  __shared__ float t[TB][TILE + 1];
  const int64_t tiles_b = (B + TB - 1) / TB;
  const int a0 = blockIdx.y * TILE;
  const int b0 = (int)(blockIdx.x % tiles_b) * TB;
  const int64_t plane = (int64_t)blockIdx.z * (gridDim.x / tiles_b) + blockIdx.x / tiles_b;
  if (plane >= planes) return;
  const float* src = in + plane * A * (int64_t)B;
  float* dst = out + plane * A * (int64_t)B;
  const int tid = threadIdx.x;
  constexpr int Q = TILE * TB / 4;  // float4s in a tile
  constexpr int QB = TB / 4;        // float4s along b
  float4 v[(Q + VT - 1) / VT];
#pragma unroll
  for (int k = 0; k < (Q + VT - 1) / VT; ++k) {
    const int q = tid + k * VT;
    const int r = q / QB, c = (q % QB) * 4;
    const int a = a0 + r, b = b0 + c;
    // B % 4 == 0 (the launch checks): a float4 is wholly inside or outside.
    if (q < Q && a < A && b < B)
      v[k] = __ldg(reinterpret_cast<const float4*>(src + (int64_t)a * B + b));
  }
#pragma unroll
  for (int k = 0; k < (Q + VT - 1) / VT; ++k) {
    const int q = tid + k * VT;
    const int r = q / QB, c = (q % QB) * 4;
    if (q < Q && a0 + r < A && b0 + c < B) {
      t[c][r] = v[k].x;
      t[c + 1][r] = v[k].y;
      t[c + 2][r] = v[k].z;
      t[c + 3][r] = v[k].w;
    }
  }
  __syncthreads();
  constexpr int E = TB * TILE;
#pragma unroll
  for (int k = 0; k < (E + VT - 1) / VT; ++k) {
    const int j = tid + k * VT;
    const int r = j / TILE, c = j % TILE;  // out row b0 + r, column a0 + c
    const int b = b0 + r, a = a0 + c;
    if (j < E && a < A && b < B) dst[(int64_t)b * A + a] = t[r][c];
  }
}

// Narrow kernels: block = VT threads, NT = VT positions along the long side.
constexpr int NT = VT;
constexpr int NTP = NT + 1;  // shared row stride: the short-side gathers do not conflict
// in [A][B] per plane with A <= NARROW: block takes b0 .. b0 + NT; reads are
// rows of in (coalesced), the out span [b0 .. b0 + NT) x A is contiguous.
__global__ void __launch_bounds__(VT)
    transpose_narrow_a(const float* __restrict__ in, float* __restrict__ out, int A, int B,
                       int64_t planes) {
  __shared__ float t[(NARROW > 0 ? NARROW : 1) * NTP];
  const int64_t tiles = (B + NT - 1) / NT;
  const int64_t plane = (int64_t)blockIdx.y * (gridDim.x / tiles) + blockIdx.x / tiles;
  if (plane >= planes) return;
  const int b0 = (int)(blockIdx.x % tiles) * NT;
  const int nb = B - b0 < NT ? B - b0 : NT;
  const float* src = in + plane * A * (int64_t)B;
  float* dst = out + plane * A * (int64_t)B + (int64_t)b0 * A;
  for (int a = 0; a < A; ++a)
    if ((int)threadIdx.x < nb)
      t[a * NTP + threadIdx.x] = __ldg(src + (int64_t)a * B + b0 + threadIdx.x);
  __syncthreads();
  for (int j = threadIdx.x; j < nb * A; j += VT) dst[j] = t[(j % A) * NTP + j / A];
}

// in [A][B] per plane with B <= NARROW: block takes a0 .. a0 + NT; the in
// span [a0 .. a0 + NT) x B is contiguous, out rows (b) are written coalesced.
__global__ void __launch_bounds__(VT)
    transpose_narrow_b(const float* __restrict__ in, float* __restrict__ out, int A, int B,
                       int64_t planes) {
  __shared__ float t[(NARROW > 0 ? NARROW : 1) * NTP];
  const int64_t tiles = (A + NT - 1) / NT;
  const int64_t plane = (int64_t)blockIdx.y * (gridDim.x / tiles) + blockIdx.x / tiles;
  if (plane >= planes) return;
  const int a0 = (int)(blockIdx.x % tiles) * NT;
  const int na = A - a0 < NT ? A - a0 : NT;
  const float* src = in + plane * A * (int64_t)B + (int64_t)a0 * B;
  float* dst = out + plane * A * (int64_t)B;
  for (int j = threadIdx.x; j < na * B; j += VT) t[(j % B) * NTP + j / B] = __ldg(src + j);
  __syncthreads();
  for (int b = 0; b < B; ++b)
    if ((int)threadIdx.x < na) dst[(int64_t)b * A + a0 + threadIdx.x] = t[b * NTP + threadIdx.x];
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
  if (NARROW > 0 && (A <= NARROW || B <= NARROW)) {
    // Blocks along the long side, planes folded into gridDim.x up to 2^31 - 1
    // and the rest on gridDim.y.
    const int64_t tiles = ((A <= NARROW ? B : A) + NT - 1) / NT;
    int64_t per_x = 0x7fffffffLL / tiles;
    if (per_x > planes) per_x = planes;
    const int64_t y = (planes + per_x - 1) / per_x;
    if (y > 65535) return 5;
    dim3 grid((unsigned)(tiles * per_x), (unsigned)y);
    if (A <= NARROW)
      transpose_narrow_a<<<grid, VT, 0, (cudaStream_t)stream>>>(
          static_cast<const float*>(X.data), static_cast<float*>(Y.data), (int)A, (int)B, planes);
    else
      transpose_narrow_b<<<grid, VT, 0, (cudaStream_t)stream>>>(
          static_cast<const float*>(X.data), static_cast<float*>(Y.data), (int)A, (int)B, planes);
    return (int)cudaGetLastError();
  }
  const bool vec = VEC == 4 && B % 4 == 0 && reinterpret_cast<uintptr_t>(X.data) % 16 == 0;
  const int64_t tb = vec ? TB : TILE;
  const int64_t tiles_a = (A + TILE - 1) / TILE, tiles_b = (B + tb - 1) / tb;
  if (tiles_a > 65535) return 5;
  // gridDim.x = tiles along B times as many planes as fit under 2^31 - 1;
  // gridDim.z carries the rest.
  int64_t per_x = 0x7fffffffLL / tiles_b;
  if (per_x > planes) per_x = planes;
  const int64_t z = (planes + per_x - 1) / per_x;
  if (z > 65535) return 5;
  dim3 grid((unsigned)(tiles_b * per_x), (unsigned)tiles_a, (unsigned)z);
  if (vec)
    transpose_vec4<<<grid, VT, 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(X.data), static_cast<float*>(Y.data), (int)A, (int)B, planes);
  else
    transpose_kernel<<<grid, dim3(32, ROWS), 0, (cudaStream_t)stream>>>(
        static_cast<const float*>(X.data), static_cast<float*>(Y.data), (int)A, (int)B, planes);
  return (int)cudaGetLastError();
}
