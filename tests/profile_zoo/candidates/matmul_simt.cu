// FLAW (no_tensor_cores): C = A @ B in fp16 computed on the CUDA cores: halves
// converted to float in shared memory, FFMA with fp32 accumulation. A decent
// SIMT GEMM otherwise: 64x128 block tile, K step 16, 8x4 outputs per thread
// (32 FFMA per 3 shared loads), 128-bit global loads, conflict-light shared
// layout, 128-bit stores through a shared staging tile. No HMMA: the tensor
// cores, ~15x the FP32 rate on fp16, stay idle.
#include <kopt/abi.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int BM = 64, BN = 128, BK = 16;
constexpr int LDAS = BM + 4;   // As[k][m] floats
constexpr int LDBS = BN + 4;   // Bs[k][n] floats
constexpr int LDCS = BN + 8;   // staging C tile, halfs

// A [M][K], B [K][N], C [M][N] row-major; M % 64 == 0, N % 128 == 0,
// K % 16 == 0, 16-byte aligned.
__global__ void __launch_bounds__(256)
matmul_simt_64x128(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C,
                   int M, int N, int K) {
  __shared__ __align__(16) float As[BK * LDAS];
  __shared__ __align__(16) float Bs[BK * LDBS];
  __shared__ __align__(16) half Cs[BM * LDCS];
  const int t = threadIdx.x, tx = t % 32, ty = t / 32;  // outputs rows ty*8.., cols tx*4..
  const int64_t m0 = (int64_t)blockIdx.y * BM, n0 = (int64_t)blockIdx.x * BN;
  float acc[8][4] = {};

  for (int k0 = 0; k0 < K; k0 += BK) {
    if (t < 128) {  // A tile: 64 rows x 16 halfs, one uint4 (8 halfs) per thread, stored transposed
      const int row = t / 2, k8 = (t % 2) * 8;
      const uint4 u = *reinterpret_cast<const uint4*>(A + (m0 + row) * K + k0 + k8);
      const half* h = reinterpret_cast<const half*>(&u);
#pragma unroll
      for (int q = 0; q < 8; ++q) As[(k8 + q) * LDAS + row] = __half2float(h[q]);
    }
    {  // B tile: 16 rows x 128 halfs, one uint4 per thread
      const int row = t / 16, c8 = (t % 16) * 8;
      const uint4 u = *reinterpret_cast<const uint4*>(B + (int64_t)(k0 + row) * N + n0 + c8);
      const half* h = reinterpret_cast<const half*>(&u);
      float4* dst = reinterpret_cast<float4*>(&Bs[row * LDBS + c8]);
      dst[0] = make_float4(__half2float(h[0]), __half2float(h[1]), __half2float(h[2]), __half2float(h[3]));
      dst[1] = make_float4(__half2float(h[4]), __half2float(h[5]), __half2float(h[6]), __half2float(h[7]));
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[k * LDAS + ty * 8]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[k * LDAS + ty * 8 + 4]);
      const float4 b = *reinterpret_cast<const float4*>(&Bs[k * LDBS + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        acc[i][0] = fmaf(a[i], b.x, acc[i][0]);
        acc[i][1] = fmaf(a[i], b.y, acc[i][1]);
        acc[i][2] = fmaf(a[i], b.z, acc[i][2]);
        acc[i][3] = fmaf(a[i], b.w, acc[i][3]);
      }
    }
    __syncthreads();
  }
  // Stage the tile as halfs, then 128-bit coalesced stores.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    __align__(8) half h[4] = {__float2half_rn(acc[i][0]), __float2half_rn(acc[i][1]),
                              __float2half_rn(acc[i][2]), __float2half_rn(acc[i][3])};
    *reinterpret_cast<uint2*>(&Cs[(ty * 8 + i) * LDCS + tx * 4]) = *reinterpret_cast<const uint2*>(h);
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int c = t + 256 * j, row = c / 16, c8 = (c % 16) * 8;
    *reinterpret_cast<uint4*>(C + (m0 + row) * N + n0 + c8) =
        *reinterpret_cast<const uint4*>(&Cs[row * LDCS + c8]);
  }
}

__global__ void matmul_any(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C,
                           int64_t M, int64_t N, int64_t K) {
  for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < M * N;
       idx += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = idx / N, n = idx % N;
    float s = 0.0f;
    for (int64_t k = 0; k < K; ++k) s = fmaf(__half2float(A[m * K + k]), __half2float(B[k * N + n]), s);
    C[idx] = __float2half_rn(s);
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 2 || n_out != 1) return 1;
  const kopt_tensor &TA = in[0], &TB = in[1];
  kopt_tensor& TC = out[0];
  if (TA.dtype != KOPT_FLOAT16 || TB.dtype != KOPT_FLOAT16 || TC.dtype != KOPT_FLOAT16) return 2;
  if (TA.ndim != 2 || TB.ndim != 2 || TC.ndim != 2) return 2;
  if (!kopt_is_contiguous(TA) || !kopt_is_contiguous(TB) || !kopt_is_contiguous(TC)) return 3;
  const int64_t M = TA.shape[0], K = TA.shape[1], N = TB.shape[1];
  if (TB.shape[0] != K || TC.shape[0] != M || TC.shape[1] != N) return 4;
  if (M * N == 0) return 0;
  const half* a = static_cast<const half*>(TA.data);
  const half* b = static_cast<const half*>(TB.data);
  half* c = static_cast<half*>(TC.data);
  cudaStream_t s = (cudaStream_t)stream;
  const bool aligned = ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                         reinterpret_cast<uintptr_t>(c)) & 15) == 0;
  if (aligned && K > 0 && M % BM == 0 && N % BN == 0 && K % BK == 0 && M / BM <= 65535 &&
      N / BN <= 65535 && M * K < (1LL << 31) && K * N < (1LL << 31)) {
    dim3 grid((unsigned)(N / BN), (unsigned)(M / BM));
    matmul_simt_64x128<<<grid, 256, 0, s>>>(a, b, c, (int)M, (int)N, (int)K);
  } else {
    matmul_any<<<1024, 256, 0, s>>>(a, b, c, M, N, K);
  }
  return (int)cudaGetLastError();
}
