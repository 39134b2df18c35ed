// Writes far outside any allocation: an illegal address (sticky CUDA error).
#include <cuda_runtime.h>
#include <kopt/abi.h>

__global__ void bad(float* p) { p[(1ll << 40) + threadIdx.x] = 1.f; }

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  bad<<<1, 32, 0, (cudaStream_t)stream>>>((float*)out[0].data);
  return 0;
}
