// A large local array indexed at runtime: lives in local memory (stack) and,
// under -maxrregcount=32, the unrolled accumulation spills.
__global__ void spill_kernel(const float* in, float* out, const int* idx, int n) {
  float local[256];
  int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 256; ++k) local[k] = in[(t + k) % n] * k;
  float acc[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) acc[k] = in[(t * 7 + k) % n];
  for (int r = 0; r < 8; ++r) {
#pragma unroll
    for (int k = 0; k < 48; ++k) acc[k] = acc[k] * acc[(k + r) % 48] + local[idx[(t + k) % n] & 255];
  }
  float s = 0;
#pragma unroll
  for (int k = 0; k < 48; ++k) s += acc[k];
  out[t] = s + local[idx[t % n] & 255];
}
