// Template: cross-entropy of class logits [N, C] (fp32, contiguous) against
// int64 targets [N], i.e. log_softmax over dim 1 then nll_loss with no class
// weights. Slots (set by a planner): KOPT_REDUCTION (0 none, 1 mean, 2 sum)
// and KOPT_IGNORE_INDEX. See README.md next to this file.
//
// A warp per row, rows strided over the grid in a fixed order: one read of
// the row keeps each lane's running max and sum of exp (online softmax; the
// sum is rescaled when the max grows), the lanes merge by shuffles, and the
// row's loss is logsumexp - x[target] (0 for an ignored target). With a
// reduction each block adds its warps' losses and counts in a fixed order
// into a partial, and a second kernel of one block adds the partials in a
// fixed order: the result does not depend on timing (no atomics).
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <kopt/scratch.h>
#include <math.h>
#include <stdint.h>

#define KOPT_REDUCTION 1  // slot: 0 none (a loss per row), 1 mean over the rows not ignored, 2 sum
#define KOPT_IGNORE_INDEX -100  // slot: the target value whose rows count for nothing

// kopt:knob THREADS 256 64..1024*2 threads per block (a warp per row)
constexpr int THREADS = 256;
// kopt:knob UNROLL 4 {1,2,4,8} float4 loads in flight per lane
constexpr int UNROLL = 4;
// kopt:knob BLOCKS_PER_SM 4 {1,2,4,8,16} blocks launched per SM (the grid strides over the rows)
constexpr int BLOCKS_PER_SM = 4;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

constexpr int WARPS = THREADS / 32;
constexpr unsigned FULL = 0xffffffffu;
constexpr long long IGNORE = KOPT_IGNORE_INDEX;
static_assert(KOPT_REDUCTION >= 0 && KOPT_REDUCTION <= 2, "KOPT_REDUCTION is 0, 1 or 2");

struct MS {
  float m, s;  // running max and sum of exp(x - m)
};

__device__ __forceinline__ MS combine(MS a, MS b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return MS{m, 0.f};
  return MS{m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

__device__ __forceinline__ void add(MS& a, float x) {
  if (x > a.m) {
    a.s = a.s * __expf(a.m - x) + 1.f;
    a.m = x;
  } else {
    a.s += __expf(x - a.m);
  }
}

__global__ void __launch_bounds__(THREADS)
    ce_rows(const float* __restrict__ x, const long long* __restrict__ t, int64_t rows,
            int64_t cols, bool vec, float* __restrict__ per_row, float2* __restrict__ partial) {
  __shared__ float2 warp_acc[WARPS];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t gw = (int64_t)blockIdx.x * WARPS + warp, nw = (int64_t)gridDim.x * WARPS;
  float loss_sum = 0.f, count = 0.f;  // lane 0's, over this warp's rows in order
  for (int64_t r = gw; r < rows; r += nw) {
    const float* xr = x + r * cols;
    MS a{-INFINITY, 0.f};
    if (vec) {
      const float4* x4 = reinterpret_cast<const float4*>(xr);
      const int64_t c4 = cols / 4;
      int64_t k = lane;
      for (; k + (int64_t)(UNROLL - 1) * 32 < c4; k += (int64_t)UNROLL * 32) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(x4 + k + u * 32);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          add(a, v[u].x);
          add(a, v[u].y);
          add(a, v[u].z);
          add(a, v[u].w);
        }
      }
      for (; k < c4; k += 32) {
        const float4 v = __ldg(x4 + k);
        add(a, v.x);
        add(a, v.y);
        add(a, v.z);
        add(a, v.w);
      }
    } else {
      for (int64_t k = lane; k < cols; k += 32) add(a, __ldg(xr + k));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      MS b{__shfl_xor_sync(FULL, a.m, o), __shfl_xor_sync(FULL, a.s, o)};
      a = combine(a, b);
    }
    if (lane == 0) {
      const long long tr = __ldg(t + r);
      float loss = 0.f, n = 0.f;
      if (tr != IGNORE) {
        loss = (tr >= 0 && tr < cols) ? a.m + logf(a.s) - __ldg(xr + tr) : NAN;
        n = 1.f;
      }
      if (KOPT_REDUCTION == 0) {
        per_row[r] = loss;
      } else {
        loss_sum += loss;
        count += n;
      }
    }
  }
  if (KOPT_REDUCTION == 0) return;
  if (lane == 0) warp_acc[warp] = make_float2(loss_sum, count);
  __syncthreads();
  if (threadIdx.x == 0) {
    float2 acc = make_float2(0.f, 0.f);
    for (int w = 0; w < WARPS; ++w) {
      acc.x += warp_acc[w].x;
      acc.y += warp_acc[w].y;
    }
    partial[blockIdx.x] = acc;
  }
}

// One block: the partials added in a fixed order (a strided sum per thread,
// then a tree), the mean or the sum written to the 0-d output.
__global__ void __launch_bounds__(1024)
    ce_finish(const float2* __restrict__ partial, int n, float* __restrict__ out) {
  __shared__ float2 acc[1024];
  float2 a = make_float2(0.f, 0.f);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    a.x += partial[i].x;
    a.y += partial[i].y;
  }
  acc[threadIdx.x] = a;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) {
      acc[threadIdx.x].x += acc[threadIdx.x + h].x;
      acc[threadIdx.x].y += acc[threadIdx.x + h].y;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = KOPT_REDUCTION == 1 ? acc[0].x / acc[0].y : acc[0].x;
}

static bool contiguous(const kopt_tensor& t) {
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != stride) return false;
    stride *= t.shape[d];
  }
  return true;
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            cudaStream_t stream) {
  if (n_in < 2 || n_out < 1) return 1;
  const kopt_tensor& x = in[0];
  const kopt_tensor& t = in[1];
  const kopt_tensor& y = out[0];
  if (x.dtype != KOPT_FLOAT32 || t.dtype != KOPT_INT64 || y.dtype != KOPT_FLOAT32) return 2;
  if (x.ndim != 2 || t.ndim != 1 || t.shape[0] != x.shape[0]) return 3;
  if (!contiguous(x) || !contiguous(t) || !contiguous(y)) return 4;
  const int64_t rows = x.shape[0], cols = x.shape[1];
  int64_t ynumel = 1;
  for (int d = 0; d < y.ndim; ++d) ynumel *= y.shape[d];
  if (ynumel != (KOPT_REDUCTION == 0 ? rows : 1)) return 5;
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 6;
  const bool vec = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x.data) % 16 == 0;
  int64_t want = (rows + WARPS - 1) / WARPS;
  int blocks = (int)(want < (int64_t)sms * BLOCKS_PER_SM ? want : (int64_t)sms * BLOCKS_PER_SM);
  if (blocks < 1) blocks = 1;
  const float* xp = static_cast<const float*>(x.data);
  const long long* tp = static_cast<const long long*>(t.data);
  float* yp = static_cast<float*>(y.data);
  if (KOPT_REDUCTION == 0) {
    if (rows > 0) ce_rows<<<blocks, THREADS, 0, stream>>>(xp, tp, rows, cols, vec, yp, nullptr);
    return cudaGetLastError() == cudaSuccess ? 0 : 7;
  }
  float2* partial = static_cast<float2*>(kopt_scratch(sizeof(float2) * blocks));
  if (!partial) return 8;
  ce_rows<<<blocks, THREADS, 0, stream>>>(xp, tp, rows, cols, vec, nullptr, partial);
  ce_finish<<<1, 1024, 0, stream>>>(partial, blocks, yp);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
