// FLAWED (the textbook first CUDA matmul): one thread per output element,
// each walking a row of A and a column of B in global memory. Every operand
// is reloaded K times through L1 with no reuse in registers or shared
// memory: L1-bound, far from the FFMA roof. Under the strict fp32 contract
// the fix is tiling (shared memory + register blocking) or split-precision
// 3xTF32, never plain TF32.
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <stdint.h>

__global__ void matmul_naive(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int m, int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += a[(int64_t)row * k + i] * b[(int64_t)i * n + col];
  c[(int64_t)row * n + col] = acc;
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 2 || n_out != 1) return 1;
  const kopt_tensor &A = in[0], &B = in[1];
  if (A.dtype != KOPT_FLOAT32 || B.dtype != KOPT_FLOAT32 || A.ndim != 2 || B.ndim != 2) return 2;
  if (!kopt_is_contiguous(A) || !kopt_is_contiguous(B) || !kopt_is_contiguous(out[0])) return 3;
  const int m = (int)A.shape[0], k = (int)A.shape[1], n = (int)B.shape[1];
  if (B.shape[0] != k) return 4;
  dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  matmul_naive<<<grid, block, 0, (cudaStream_t)stream>>>(static_cast<const float*>(A.data),
                                                         static_cast<const float*>(B.data),
                                                         static_cast<float*>(out[0].data), m, n, k);
  return (int)cudaGetLastError();
}
