// A program that launches each fixture kernel once, for recording real ncu
// CSV on a GPU (record.sh). The kernels of ../sass/kernels.cu plus three with
// a classic flaw each.
#include <cstdio>
#include <cuda_runtime.h>

#include "../sass/kernels.cu"

// Column-wise reads: each warp touches 32 rows (uncoalesced global loads).
extern "C" __global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out,
                                           int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

// A 32x32 tile read down its columns: 32-way shared-memory bank conflicts.
extern "C" __global__ void smem_column_read(const float* __restrict__ in, float* __restrict__ out) {
  __shared__ float tile[32][32];
  int x = threadIdx.x, y = threadIdx.y;
  int base = blockIdx.x * 1024;
  tile[y][x] = in[base + y * 32 + x];
  __syncthreads();
  out[base + y * 32 + x] = tile[x][y];
}

#define CHECK(call)                                                        \
  do {                                                                     \
    cudaError_t e = (call);                                                \
    if (e != cudaSuccess) {                                                \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e));      \
      return 1;                                                            \
    }                                                                      \
  } while (0)

int main() {
  const int n = 1 << 24;  // a power of two (local_array, register_spill)
  float *a, *b;
  int* idx;
  half *ha, *hb;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&idx, n * sizeof(int)));
  CHECK(cudaMalloc(&ha, 256 * sizeof(half)));
  CHECK(cudaMalloc(&hb, 256 * sizeof(half)));
  CHECK(cudaMemset(a, 0, n * sizeof(float)));
  CHECK(cudaMemset(idx, 0, n * sizeof(int)));
  CHECK(cudaMemset(ha, 0, 256 * sizeof(half)));
  CHECK(cudaMemset(hb, 0, 256 * sizeof(half)));
  const int t = 256;
  copy_scalar<<<n / t, t>>>(a, b, n);
  copy_float4<<<n / 4 / t, t>>>(reinterpret_cast<const float4*>(a), reinterpret_cast<float4*>(b), n / 4);
  local_array<<<n / t, t>>>(a, idx, b, n);
  register_spill<<<n / t, t>>>(a, b, n);
  smem_reduce<<<n / t, t>>>(a, b, n);
  softplus_branchy<<<n / t, t>>>(a, b, n);
  wmma_tile<<<1, 32>>>(ha, hb, b);
  transpose_naive<<<dim3(4096 / 32, 4096 / 8), dim3(32, 8)>>>(a, b, 4096, 4096);
  smem_column_read<<<n / 1024, dim3(32, 32)>>>(a, b);
  copy_scalar<<<4, t>>>(a, b, 4 * t);  // a tiny grid
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::puts("profile_fixtures: ok");
  return 0;
}
