// Cheat: write zeros (the fastest possible "kernel"): every element written,
// none right.
#include <kopt/abi.h>
#include <cuda_runtime.h>

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  return (int)cudaMemsetAsync(out[0].data, 0, kopt_numel(out[0]) * sizeof(float), (cudaStream_t)stream);
}
