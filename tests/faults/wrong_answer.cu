// Fault: copies the input instead of applying the operator.
#include <kopt/abi.h>
#include <cuda_runtime.h>

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  size_t bytes = kopt_numel(in[0]) * sizeof(float);
  return (int)cudaMemcpyAsync(out[0].data, in[0].data, bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
}
