// GOOD. out = x^T through a 32x32 shared-memory tile with a padded row
// ([32][33] floats): 128-bit coalesced global loads and stores, and neither
// the transposing shared stores nor the row reads have bank conflicts
// (bank = (4*c4 + q + r) % 32 and (rr + 4*cc + k) % 32 are distinct across a
// warp). 256 threads per tile, one float4 in and one float4 out each.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int kTile = 32;

// x: [R][C], out: [C][R]; R % 32 == 0, C % 32 == 0, 16-byte aligned.
__global__ void __launch_bounds__(256)
transpose_tile32_padded(const float4* __restrict__ x, float4* __restrict__ out, int64_t R, int64_t C) {
  __shared__ float tile[kTile][kTile + 1];  // tile[c][r] = x[r][c] of this 32x32 block
  const int t = threadIdx.x;
  const int64_t r0 = (int64_t)blockIdx.y * kTile, c0 = (int64_t)blockIdx.x * kTile;
  {
    const int r = t / 8, c4 = t % 8;
    const float4 v = x[((r0 + r) * C + c0) / 4 + c4];
    tile[4 * c4 + 0][r] = v.x;
    tile[4 * c4 + 1][r] = v.y;
    tile[4 * c4 + 2][r] = v.z;
    tile[4 * c4 + 3][r] = v.w;
  }
  __syncthreads();
  {
    const int rr = t / 8, cc = t % 8;  // out row c0 + rr, out columns r0 + 4cc .. +3
    float4 o;
    o.x = tile[rr][4 * cc + 0];
    o.y = tile[rr][4 * cc + 1];
    o.z = tile[rr][4 * cc + 2];
    o.w = tile[rr][4 * cc + 3];
    out[((c0 + rr) * R + r0) / 4 + cc] = o;
  }
}

__global__ void transpose_any(const float* __restrict__ x, float* __restrict__ out, int64_t R, int64_t C) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < R * C;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t c = i / R, r = i % R;  // out[c][r]
    out[i] = x[r * C + c];
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32 || X.ndim != 2 || Y.ndim != 2) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const int64_t R = X.shape[0], C = X.shape[1];
  if (Y.shape[0] != C || Y.shape[1] != R) return 4;
  if (R * C == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  const bool aligned = ((reinterpret_cast<uintptr_t>(X.data) | reinterpret_cast<uintptr_t>(Y.data)) & 15) == 0;
  if (aligned && R % kTile == 0 && C % kTile == 0 && R / kTile <= 65535) {
    dim3 grid((unsigned)(C / kTile), (unsigned)(R / kTile));
    transpose_tile32_padded<<<grid, 256, 0, s>>>(static_cast<const float4*>(X.data),
                                                 static_cast<float4*>(Y.data), R, C);
  } else {
    transpose_any<<<1024, 256, 0, s>>>(static_cast<const float*>(X.data), static_cast<float*>(Y.data), R, C);
  }
  return (int)cudaGetLastError();
}
