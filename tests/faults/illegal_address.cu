// Fault: every thread stores through a wild pointer (illegal address).
#include <kopt/abi.h>
#include <cuda_runtime.h>

__global__ void wild_store(float* p) { p[threadIdx.x * 1024 * 1024] = 1.0f; }

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  wild_store<<<1, 256, 0, (cudaStream_t)stream>>>(reinterpret_cast<float*>(0x10));
  return (int)cudaGetLastError();
}
