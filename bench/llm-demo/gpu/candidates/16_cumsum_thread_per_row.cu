// torch.cumsum(x, dim=1) on a contiguous (R, N) fp32 tensor, one thread per
// row walking it in order with a double running sum. Correct and simple, but
// a warp's loads touch 32 rows at once and there are few threads: far slower
// than a warp per row.
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <stdint.h>

constexpr int THREADS = 128;

__global__ void cumsum_row_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                                  int64_t n) {
  const int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* xr = x + row * n;
  float* yr = y + row * n;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += (double)xr[i];
    yr[i] = (float)sum;
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
  const int64_t blocks = (rows + THREADS - 1) / THREADS;
  cumsum_row_kernel<<<(unsigned)blocks, THREADS, 0, (cudaStream_t)stream>>>(
      static_cast<const float*>(X.data), static_cast<float*>(Y.data), rows, n);
  return (int)cudaGetLastError();
}
