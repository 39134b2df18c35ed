// mean((p - t)^2) -> 0-d fp32. Deterministic two-stage reduction: a
// grid-stride float4 pass writes one double partial per block into a static
// device buffer, then one block sums the partials (in double, in a fixed
// order) and writes the mean. Not safe for concurrent calls on different
// streams (they would share the partials buffer).
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

// kopt:knob THREADS 256 64..1024*2 threads per block of the partial-sum pass
constexpr int THREADS = 256;
// kopt:knob BLOCKS_PER_SM 8 {1,2,4,8} partial-sum blocks per SM: more loads in flight vs fewer partials
constexpr int BLOCKS_PER_SM = 8;
// block_sum<THREADS> reduces one partial per warp in one warp.
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024
constexpr int MAX_BLOCKS = 1024;  // finalize_kernel sums them with one 1024-thread block
__device__ double g_partials[MAX_BLOCKS];

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int NT>
__device__ __forceinline__ double block_sum(double v) {
  __shared__ double red[NT / 32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) red[w] = v;
  __syncthreads();
  v = lane < NT / 32 ? red[lane] : 0.0;
  return warp_sum(v);
}

__global__ void __launch_bounds__(THREADS)
sq_diff_partial_kernel(const float* __restrict__ p, const float* __restrict__ t, int64_t n,
                       bool vec) {
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  const int64_t tid = (int64_t)blockIdx.x * THREADS + threadIdx.x;
  float acc0 = 0.f, acc1 = 0.f;
  int64_t done = 0;
  if (vec) {
    const float4* p4 = reinterpret_cast<const float4*>(p);
    const float4* t4 = reinterpret_cast<const float4*>(t);
    const int64_t n4 = n >> 2;
    for (int64_t i = tid; i < n4; i += stride) {
      const float4 a = p4[i], b = t4[i];
      const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z, dw = a.w - b.w;
      acc0 += dx * dx + dy * dy;
      acc1 += dz * dz + dw * dw;
    }
    done = n4 * 4;
  }
  for (int64_t i = done + tid; i < n; i += stride) {
    const float d = p[i] - t[i];
    acc0 += d * d;
  }
  const double s = block_sum<THREADS>((double)acc0 + (double)acc1);
  if (threadIdx.x == 0) g_partials[blockIdx.x] = s;
}

__global__ void __launch_bounds__(1024)
finalize_kernel(float* __restrict__ out, int nblocks, int64_t n) {
  double v = threadIdx.x < nblocks ? g_partials[threadIdx.x] : 0.0;
  v = block_sum<1024>(v);
  if (threadIdx.x == 0) out[0] = (float)(v / (double)n);
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 2 || n_out != 1) return 1;
  const kopt_tensor &P = in[0], &T = in[1];
  kopt_tensor& Y = out[0];
  if (P.dtype != KOPT_FLOAT32 || T.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if (!kopt_is_contiguous(P) || !kopt_is_contiguous(T)) return 3;
  const int64_t n = kopt_numel(P);
  if (kopt_numel(T) != n || kopt_numel(Y) != 1) return 4;

  const float* ps = static_cast<const float*>(P.data);
  const float* ts = static_cast<const float*>(T.data);
  const bool vec = ((reinterpret_cast<uintptr_t>(ps) | reinterpret_cast<uintptr_t>(ts)) & 15) == 0;
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  int64_t blocks = ((vec ? n / 4 : n) + THREADS - 1) / THREADS;
  int64_t cap = (int64_t)sms * BLOCKS_PER_SM;
  if (cap > MAX_BLOCKS) cap = MAX_BLOCKS;
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  cudaStream_t s = (cudaStream_t)stream;
  sq_diff_partial_kernel<<<(unsigned)blocks, THREADS, 0, s>>>(ps, ts, n, vec);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return (int)e;
  finalize_kernel<<<1, 1024, 0, s>>>(static_cast<float*>(Y.data), (int)blocks, n);
  return (int)cudaGetLastError();
}
