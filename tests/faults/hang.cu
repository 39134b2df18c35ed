// Fault: a kernel that never terminates (the flag is never set).
#include <kopt/abi.h>
#include <cuda_runtime.h>

__global__ void spin(volatile int* flag) {
  while (*flag == 0) {
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  // The output buffer is poisoned with NaN (non-zero bits), so spin on a word
  // we zero first.
  int* flag = static_cast<int*>(out[0].data);
  cudaMemsetAsync(flag, 0, sizeof(int), (cudaStream_t)stream);
  spin<<<1, 1, 0, (cudaStream_t)stream>>>(flag);
  return (int)cudaGetLastError();
}
