// Small kernels whose SASS the instruction-mix parser is tested on.
// Build and dump commands: README.md in this folder.
#include <cuda_fp16.h>
#include <mma.h>

// Scalar 4-byte loads and stores: LDG.E / STG.E.
extern "C" __global__ void copy_scalar(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2.0f + 1.0f;
}

// float4 loads and stores: LDG.E.128 / STG.E.128.
extern "C" __global__ void copy_float4(const float4* __restrict__ in, float4* __restrict__ out, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = in[i];
    v.x = v.x * 2.0f + 1.0f;
    v.y = v.y * 2.0f + 1.0f;
    v.z = v.z * 2.0f + 1.0f;
    v.w = v.w * 2.0f + 1.0f;
    out[i] = v;
  }
}

// A per-thread array indexed at run time lives in local memory: LDL / STL.
extern "C" __global__ void local_array(const float* __restrict__ in, const int* __restrict__ idx,
                                       float* __restrict__ out, int n) {  // n: a power of two
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float buf[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) buf[k] = in[(i + k) & (n - 1)];
  float acc = 0.f;
  for (int k = 0; k < 16; ++k) acc += buf[idx[(i + k) & (n - 1)] & 63];
  out[i] = acc;
}

// Block reduction through shared memory: STS / LDS / BAR, plus SHFL.
extern "C" __global__ void smem_reduce(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.f;
  __syncthreads();
  for (int s = blockDim.x / 2; s >= 32; s >>= 1) {
    if (threadIdx.x < s) tile[threadIdx.x] += tile[threadIdx.x + s];
    __syncthreads();
  }
  float v = threadIdx.x < 32 ? tile[threadIdx.x] : 0.f;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) atomicAdd(out, v);
}

// Special functions (MUFU) and a data-dependent branch.
extern "C" __global__ void softplus_branchy(const float* __restrict__ in, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float y;
  if (x > 20.f) {
    y = x;
  } else {
    y = __logf(1.f + __expf(x));
  }
  out[i] = y * rsqrtf(1.f + x * x);
}

// One 16x16x16 half-precision tile on tensor cores via WMMA: HMMA.
extern "C" __global__ void wmma_tile(const half* __restrict__ a, const half* __restrict__ b,
                                     float* __restrict__ c) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

// Many live values under a 32-register cap: ptxas spills (spill stores/loads
// through STL/LDL).
extern "C" __global__ void __maxnreg__(32) register_spill(const float* __restrict__ in,
                                                          float* __restrict__ out, int n) {  // n: a power of two
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) v[k] = in[(i + k * 97) & (n - 1)];
  float acc = 0.f;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int k = 0; k < 48; ++k) acc = fmaf(v[k], v[(k + r + 1) % 48], acc);
  }
  out[i] = acc;
}
