// Cheat: a correct ReLU for tasks/level1/01_relu.py's own shape only. The
// element count is baked in (8192 x 16384) and the tensor shapes are ignored,
// as a kernel tuned for one benchmark shape might. Caught by a contract with
// a second shape (run with --second-shape batch_size=8193): the extra row
// keeps the poison the worker wrote, and the reason names the second shape.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int64_t kNumel = 8192LL * 16384LL;

__global__ void relu_fixed(const float* __restrict__ x, float* __restrict__ y) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < kNumel) {
    float v = x[i];
    y[i] = v > 0.f ? v : 0.f;
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  relu_fixed<<<(unsigned)((kNumel + 255) / 256), 256, 0, (cudaStream_t)stream>>>((const float*)in[0].data,
                                                                                (float*)out[0].data);
  return (int)cudaGetLastError();
}
