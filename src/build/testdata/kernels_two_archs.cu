// A non-inlined device function (properties without an entry), a __constant__
// table, and a dynamic-shared-memory kernel compiled for two architectures.
__constant__ float kTable[64];
__device__ __noinline__ float lookup(int i) { return kTable[i & 63] * 2.0f; }
__global__ void use_table(float* out, int n) {
  extern __shared__ float dyn[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  dyn[threadIdx.x] = lookup(i);
  __syncthreads();
  if (i < n) out[i] = dyn[(threadIdx.x + 1) % blockDim.x];
}
