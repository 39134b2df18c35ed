// Cheat attempt: run the kernel on a private stream created with
// cudaStreamDefault instead of the stream kopt passes, and return at once.
// (A blocking stream synchronises with the legacy default stream that torch
// uses, so the end event waits for it: this one is timed honestly.)
#include <kopt/abi.h>
#include <cuda_runtime.h>

__global__ void relu(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

static cudaStream_t side;

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  if (!side && cudaStreamCreateWithFlags(&side, cudaStreamDefault) != cudaSuccess) return 1;
  long n = kopt_numel(in[0]);
  relu<<<(n + 255) / 256, 256, 0, side>>>((const float*)in[0].data, (float*)out[0].data, n);
  return (int)cudaGetLastError();
}
