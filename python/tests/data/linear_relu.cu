// kopt ABI candidate for linear_relu.py: y = relu(x W^T + b), naive.
// Inputs: x (M, K), weight (N, K), bias (N). Output: y (M, N).
#include <cuda_runtime.h>
#include <kopt/abi.h>

static int g_init_calls = 0;

__global__ void linear_relu(const float* x, const float* w, const float* b, float* y, int M, int N, int K,
                            long long sxm, long long sxk, long long swn, long long swk) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= M * N) return;
  int m = i / N, n = i % N;
  float acc = b[n];
  for (int k = 0; k < K; ++k) acc += x[m * sxm + k * sxk] * w[n * swn + k * swk];
  y[i] = acc > 0.f ? acc : 0.f;
}

extern "C" int kopt_init(const kopt_tensor* in, int n_in, kopt_stream stream) {
  ++g_init_calls;
  return n_in == 3 ? 0 : 11;
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  if (n_in != 3 || n_out != 1 || g_init_calls < 1) return 1;
  const kopt_tensor &X = in[0], &W = in[1], &B = in[2];
  int M = (int)X.shape[0], K = (int)X.shape[1], N = (int)W.shape[0];
  int total = M * N;
#ifdef KOPT_HALF_WRITE
  total /= 2;  // deliberately leaves half of the output unwritten
#endif
  int threads = 128, blocks = (M * N + threads - 1) / threads;
  linear_relu<<<blocks, threads, 0, (cudaStream_t)stream>>>(
      (const float*)X.data, (const float*)W.data, (const float*)B.data, (float*)out[0].data,
      total / N > 0 ? total / N : 1, N, K, X.strides[0], X.strides[1], W.strides[0], W.strides[1]);
  return (int)cudaGetLastError();
}
