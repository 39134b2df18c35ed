// FLAW (bank_conflicts): out = x^T through a 32x128 shared tile stored
// transposed without padding (tileT[128][32]). A warp loads 32 consecutive
// float4s of one input row and scatters them into tileT[4*c4 + q][r]: every
// lane's address is r modulo 32 banks, a 32-way conflict on each of the 16
// shared stores per thread. Global loads and stores are 128-bit and
// coalesced, the row reads (LDS.128) are conflict-free.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int kRowsT = 32, kColsT = 128;

// x: [R][C], out: [C][R]; R % 32 == 0, C % 128 == 0, 16-byte aligned.
__global__ void __launch_bounds__(256)
transpose_tile_unpadded(const float4* __restrict__ x, float4* __restrict__ out, int64_t R, int64_t C) {
  __shared__ __align__(16) float tileT[kColsT][kRowsT];  // tileT[c][r] = x[r0 + r][c0 + c]
  const int t = threadIdx.x;
  const int64_t r0 = (int64_t)blockIdx.y * kRowsT, c0 = (int64_t)blockIdx.x * kColsT;
  const int c4 = t % 32;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int r = t / 32 + 8 * k;
    const float4 v = x[((r0 + r) * C + c0) / 4 + c4];
    tileT[4 * c4 + 0][r] = v.x;
    tileT[4 * c4 + 1][r] = v.y;
    tileT[4 * c4 + 2][r] = v.z;
    tileT[4 * c4 + 3][r] = v.w;
  }
  __syncthreads();
  const int cc = t % 8;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int j = t / 8 + 32 * k;  // out row c0 + j, out columns r0 + 4cc .. +3
    const float4 o = *reinterpret_cast<const float4*>(&tileT[j][4 * cc]);
    out[((c0 + j) * R + r0) / 4 + cc] = o;
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
  if (aligned && R % kRowsT == 0 && C % kColsT == 0 && R / kRowsT <= 65535) {
    dim3 grid((unsigned)(C / kColsT), (unsigned)(R / kRowsT));
    transpose_tile_unpadded<<<grid, 256, 0, s>>>(static_cast<const float4*>(X.data),
                                                 static_cast<float4*>(Y.data), R, C);
  } else {
    transpose_any<<<1024, 256, 0, s>>>(static_cast<const float*>(X.data), static_cast<float*>(Y.data), R, C);
  }
  return (int)cudaGetLastError();
}
