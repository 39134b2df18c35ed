// Template: GroupNorm over a contiguous fp32 tensor [N, C, *spatial] with
// optional per-channel affine (in[1] weight, in[2] bias, each [C]). Slots
// (set by a planner): KOPT_GROUPS (num_groups) and KOPT_EPS_E12 (eps x 1e12,
// an integer, since slots are integer literals). See README.md next to this
// file.
//
// One block per (sample, group) row of (C / G) * HxW contiguous elements:
//   pass 1 reads the row once (float4 when HxW % 4 == 0 and the base is
//          16-byte aligned), each thread keeping a count, a sum and a sum of
//          squares of x - x[row start] (shifted, so the squares do not cancel);
//          the threads' statistics merge pairwise by Chan's formula (warp
//          shuffles, then one warp over the warps);
//   pass 2 reads the row again, channel by channel, with the channel's
//          scale = rstd * w[c] and shift = b[c] - mean * scale folded once,
//          and writes y = x * scale + shift.
// The second read mostly hits L2 when the rows resident at once (blocks per
// SM x SMs x row bytes) fit in it; the floor's share then approaches one
// DRAM read and one write.
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <math.h>
#include <stdint.h>

#define KOPT_GROUPS 32         // slot: num_groups; must divide the channel count (dim 1)
#define KOPT_EPS_E12 10000000  // slot: eps x 1e12 rounded to an integer (1e-5 -> 10000000)

// kopt:knob THREADS 512 128..1024*2 threads per row's block: more threads or more rows resident
constexpr int THREADS = 512;
// kopt:knob UNROLL 4 {1,2,4} float4 loads in flight per thread in each pass
constexpr int UNROLL = 4;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

constexpr int G = KOPT_GROUPS;
static_assert(G >= 1, "KOPT_GROUPS is at least 1");
constexpr double EPS = (double)KOPT_EPS_E12 * 1e-12;
constexpr int WARPS = THREADS / 32;
constexpr unsigned FULL = 0xffffffffu;

struct Stat {
  float n, mean, m2;
};

__device__ __forceinline__ Stat merge(Stat a, Stat b) {
  const float n = a.n + b.n;
  if (n == 0.f) return a;
  const float f = b.n / n;
  const float d = b.mean - a.mean;
  Stat r;
  r.n = n;
  r.mean = a.mean + d * f;
  r.m2 = a.m2 + b.m2 + d * d * a.n * f;
  return r;
}

__device__ __forceinline__ Stat shuffle_down(Stat s, int o) {
  Stat t;
  t.n = __shfl_down_sync(FULL, s.n, o);
  t.mean = __shfl_down_sync(FULL, s.mean, o);
  t.m2 = __shfl_down_sync(FULL, s.m2, o);
  return t;
}

// The row's mean and rstd, for every thread of the block.
__device__ __forceinline__ void row_stats(const float* __restrict__ row, int64_t len, bool vec,
                                          float* mean_out, float* rstd_out) {
  __shared__ Stat warp_stats[WARPS];
  __shared__ float result[2];
  const float shift = __ldg(row);
  float n = 0.f, s = 0.f, ss = 0.f;
  const int tid = threadIdx.x;
  if (vec) {
    const float4* r4 = reinterpret_cast<const float4*>(row);
    const int64_t len4 = len / 4;
    int64_t k = tid;
    for (; k + (int64_t)(UNROLL - 1) * THREADS < len4; k += (int64_t)UNROLL * THREADS) {
      float4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(r4 + k + (int64_t)u * THREADS);
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const float a = v[u].x - shift, b = v[u].y - shift, c = v[u].z - shift, d = v[u].w - shift;
        s += (a + b) + (c + d);
        ss += (a * a + b * b) + (c * c + d * d);
      }
      n += 4.f * UNROLL;
    }
    for (; k < len4; k += THREADS) {
      const float4 v = __ldg(r4 + k);
      const float a = v.x - shift, b = v.y - shift, c = v.z - shift, d = v.w - shift;
      s += (a + b) + (c + d);
      ss += (a * a + b * b) + (c * c + d * d);
      n += 4.f;
    }
  } else {
    for (int64_t k = tid; k < len; k += THREADS) {
      const float a = __ldg(row + k) - shift;
      s += a;
      ss += a * a;
      n += 1.f;
    }
  }
  // This thread's (count, mean, M2) about the shift, then merged.
  Stat st;
  st.n = n;
  st.mean = n > 0.f ? s / n : 0.f;
  st.m2 = n > 0.f ? fmaxf(ss - s * st.mean, 0.f) : 0.f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) st = merge(st, shuffle_down(st, o));
  if ((tid & 31) == 0) warp_stats[tid >> 5] = st;
  __syncthreads();
  if (tid < 32) {
    Stat w = tid < WARPS ? warp_stats[tid] : Stat{0.f, 0.f, 0.f};
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) w = merge(w, shuffle_down(w, o));
    if (tid == 0) {
      const float var = w.n > 0.f ? w.m2 / w.n : 0.f;  // biased, as torch's GroupNorm
      result[0] = shift + w.mean;
      result[1] = rsqrtf(var + (float)EPS);
    }
  }
  __syncthreads();
  *mean_out = result[0];
  *rstd_out = result[1];
}

__global__ void __launch_bounds__(THREADS)
    group_norm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                      const float* __restrict__ b, float* __restrict__ y, int64_t C, int64_t hw,
                      bool vec) {
  const int64_t row = blockIdx.x;  // sample * G + group
  const int64_t cpg = C / G;
  const int64_t len = cpg * hw;
  const float* xr = x + row * len;
  float* yr = y + row * len;
  float mean, rstd;
  row_stats(xr, len, vec, &mean, &rstd);
  const int64_t c0 = (row % G) * cpg;
  for (int64_t j = 0; j < cpg; ++j) {
    const float wc = w ? __ldg(w + c0 + j) : 1.f;
    const float bc = b ? __ldg(b + c0 + j) : 0.f;
    const float scale = rstd * wc;
    const float shift = bc - mean * scale;
    const float* xc = xr + j * hw;
    float* yc = yr + j * hw;
    if (vec) {
      const float4* x4 = reinterpret_cast<const float4*>(xc);
      float4* y4 = reinterpret_cast<float4*>(yc);
      const int64_t hw4 = hw / 4;
      int64_t k = threadIdx.x;
      for (; k + (int64_t)(UNROLL - 1) * THREADS < hw4; k += (int64_t)UNROLL * THREADS) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(x4 + k + (int64_t)u * THREADS);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          float4 o;
          o.x = fmaf(v[u].x, scale, shift);
          o.y = fmaf(v[u].y, scale, shift);
          o.z = fmaf(v[u].z, scale, shift);
          o.w = fmaf(v[u].w, scale, shift);
          y4[k + (int64_t)u * THREADS] = o;
        }
      }
      for (; k < hw4; k += THREADS) {
        const float4 v = __ldg(x4 + k);
        y4[k] = make_float4(fmaf(v.x, scale, shift), fmaf(v.y, scale, shift),
                            fmaf(v.z, scale, shift), fmaf(v.w, scale, shift));
      }
    } else {
      for (int64_t k = threadIdx.x; k < hw; k += THREADS) yc[k] = fmaf(__ldg(xc + k), scale, shift);
    }
  }
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
  if (n_in < 1 || n_out < 1) return 1;
  const kopt_tensor& x = in[0];
  const kopt_tensor& y = out[0];
  if (x.dtype != KOPT_FLOAT32 || y.dtype != KOPT_FLOAT32 || x.ndim < 2) return 2;
  if (!contiguous(x) || !contiguous(y)) return 3;
  const int64_t N = x.shape[0], C = x.shape[1];
  int64_t hw = 1;
  for (int d = 2; d < x.ndim; ++d) hw *= x.shape[d];
  int64_t numel = N * C * hw, ynumel = 1;
  for (int d = 0; d < y.ndim; ++d) ynumel *= y.shape[d];
  if (ynumel != numel || C % G != 0) return 4;
  const float* w = nullptr;
  const float* b = nullptr;
  if (n_in >= 3) {  // the affine parameters, [C] each
    for (int k = 1; k <= 2; ++k)
      if (in[k].dtype != KOPT_FLOAT32 || in[k].ndim != 1 || in[k].shape[0] != C) return 5;
    w = static_cast<const float*>(in[1].data);
    b = static_cast<const float*>(in[2].data);
  } else if (n_in == 2) {
    return 5;
  }
  if (numel == 0) return 0;
  const int64_t rows = N * G;
  if (rows > 0x7fffffffLL) return 6;
  const bool vec = hw % 4 == 0 && reinterpret_cast<uintptr_t>(x.data) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(y.data) % 16 == 0;
  group_norm_kernel<<<(unsigned)rows, THREADS, 0, stream>>>(
      static_cast<const float*>(x.data), w, b, static_cast<float*>(y.data), C, hw, vec);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
