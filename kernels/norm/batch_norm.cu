// Template: BatchNorm in training mode over a contiguous fp32 tensor
// [N, C, *spatial]: normalizes with the batch's own per-channel mean and
// (biased) variance, and updates the running statistics as torch does
// (running_mean and running_var with the unbiased variance, by momentum;
// num_batches_tracked += 1). ABI inputs: x, then weight and bias [C] when
// KOPT_AFFINE, then running_mean [C], running_var [C], num_batches_tracked
// (int64, 0-d). Slots (set by a planner): KOPT_AFFINE, KOPT_EPS_E12,
// KOPT_MOMENTUM_E12 (eps and momentum x 1e12, integers, since slots are
// integer literals). See README.md next to this file.
//
// Three launches on the caller's stream:
//   stats    a grid of (SPLIT, C) blocks: block s of channel c reads every
//            SPLIT-th tile of the channel's N planes (float4 when HxW % 4 == 0
//            and the base is 16-byte aligned), each thread summing x - K and
//            its square, K = the channel's first element (the same shift in
//            every block, so the blocks' sums add exactly); the block's sums
//            (in double) go to scratch;
//   finish   a thread per channel adds its SPLIT partials in a fixed order
//            (the result does not depend on timing), folds the scale and
//            shift of the affine transform, and updates the running
//            statistics; thread 0 adds 1 to num_batches_tracked;
//   apply    y = x * scale[c] + shift[c] over the whole tensor (float4).
// x is read twice: a tensor larger than L2 reaches about 2/3 of the floor
// (one read and one write).
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <kopt/scratch.h>
#include <math.h>
#include <stdint.h>

#define KOPT_AFFINE 1                   // slot: 1 weight and bias are inputs 1 and 2; 0 none
#define KOPT_EPS_E12 10000000           // slot: eps x 1e12 rounded (1e-5 -> 10000000)
#define KOPT_MOMENTUM_E12 100000000000  // slot: momentum x 1e12 rounded (0.1 -> 100000000000)

// kopt:knob THREADS 256 128..1024*2 threads per block of the statistics and apply passes
constexpr int THREADS = 256;
// kopt:knob UNROLL 4 {1,2,4,8} float4 loads in flight per thread in the statistics pass
constexpr int UNROLL = 4;
// kopt:knob WAVES 4 {1,2,4,8,16} statistics blocks per SM (channels split to fill the GPU)
constexpr int WAVES = 4;
// kopt:knob APPLY_BLOCKS_PER_SM 8 {2,4,8,16} blocks per SM of the grid-stride apply pass
constexpr int APPLY_BLOCKS_PER_SM = 8;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

constexpr bool AFFINE = KOPT_AFFINE != 0;
constexpr double EPS = (double)KOPT_EPS_E12 * 1e-12;
constexpr double MOMENTUM = (double)KOPT_MOMENTUM_E12 * 1e-12;
constexpr int WARPS = THREADS / 32;
constexpr unsigned FULL = 0xffffffffu;
constexpr int64_t TILE = (int64_t)THREADS * 4 * UNROLL;  // elements per tile

// Block s of channel c: the sums of x - K and (x - K)^2 over tiles s, s +
// SPLIT, ... of the channel's N planes (tiles_per_plane each).
template <bool VEC>
__global__ void __launch_bounds__(THREADS)
    bn_stats(const float* __restrict__ x, int64_t C, int64_t hw, int64_t tiles_per_plane,
             int64_t units, double2* __restrict__ partial) {
  __shared__ double2 warp_acc[WARPS];
  const int64_t c = blockIdx.y;
  const int split = gridDim.x;
  const float K = __ldg(x + c * hw);
  float s = 0.f, ss = 0.f;
  for (int64_t u = blockIdx.x; u < units; u += split) {
    const int64_t n = u / tiles_per_plane, t = u - n * tiles_per_plane;
    const float* plane = x + (n * C + c) * hw;
    const int64_t start = t * TILE;
    if (VEC) {
      const float4* p4 = reinterpret_cast<const float4*>(plane + start);
      const int64_t left4 = (hw - start) / 4;  // hw % 4 == 0 on this path
      float4 v[UNROLL];
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
        const int64_t i = (int64_t)k * THREADS + threadIdx.x;
        v[k] = i < left4 ? __ldg(p4 + i) : make_float4(K, K, K, K);
      }
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
        const float a = v[k].x - K, b = v[k].y - K, cc = v[k].z - K, d = v[k].w - K;
        s += (a + b) + (cc + d);
        ss += (a * a + b * b) + (cc * cc + d * d);
      }
    } else {
      const int64_t end = start + TILE < hw ? start + TILE : hw;
      for (int64_t i = start + threadIdx.x; i < end; i += THREADS) {
        const float a = __ldg(plane + i) - K;
        s += a;
        ss += a * a;
      }
    }
  }
  double ds = s, dss = ss;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    ds += __shfl_down_sync(FULL, ds, o);
    dss += __shfl_down_sync(FULL, dss, o);
  }
  if ((threadIdx.x & 31) == 0) warp_acc[threadIdx.x >> 5] = make_double2(ds, dss);
  __syncthreads();
  if (threadIdx.x == 0) {
    double2 acc = make_double2(0.0, 0.0);
    for (int w = 0; w < WARPS; ++w) {  // a fixed order
      acc.x += warp_acc[w].x;
      acc.y += warp_acc[w].y;
    }
    partial[c * split + blockIdx.x] = acc;
  }
}

// A thread per channel: the batch statistics, the folded affine transform
// (scale_shift[c] = (scale, shift)) and the running statistics' update.
__global__ void bn_finish(const float* __restrict__ x, const double2* __restrict__ partial,
                          int split, int64_t C, int64_t hw, double count,
                          const float* __restrict__ w, const float* __restrict__ b,
                          float* __restrict__ running_mean, float* __restrict__ running_var,
                          long long* __restrict__ batches, float2* __restrict__ scale_shift) {
  const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (c == 0 && batches) *batches += 1;
  if (c >= C) return;
  double s = 0.0, ss = 0.0;
  for (int k = 0; k < split; ++k) {
    s += partial[c * split + k].x;
    ss += partial[c * split + k].y;
  }
  const double K = (double)x[c * hw];
  const double d = s / count;                        // mean - K
  const double var = fmax(ss / count - d * d, 0.0);  // biased: what normalizes
  const double mean = K + d;
  const float rstd = (float)(1.0 / sqrt(var + EPS));
  const float wc = AFFINE ? w[c] : 1.f;
  const float bc = AFFINE ? b[c] : 0.f;
  const float scale = rstd * wc;
  scale_shift[c] = make_float2(scale, bc - (float)mean * scale);
  if (running_mean) {
    const double unbiased = count > 1.0 ? var * count / (count - 1.0) : var;
    running_mean[c] = (float)((1.0 - MOMENTUM) * (double)running_mean[c] + MOMENTUM * mean);
    running_var[c] = (float)((1.0 - MOMENTUM) * (double)running_var[c] + MOMENTUM * unbiased);
  }
}

template <bool VEC>
__global__ void __launch_bounds__(THREADS)
    bn_apply(const float* __restrict__ x, float* __restrict__ y, int64_t C, int64_t hw, int64_t n,
             const float2* __restrict__ scale_shift) {
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  if (VEC) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    const int64_t hw4 = hw / 4;
    for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n / 4; i += stride) {
      const float2 t = __ldg(scale_shift + (i / hw4) % C);
      const float4 v = __ldg(x4 + i);
      y4[i] = make_float4(fmaf(v.x, t.x, t.y), fmaf(v.y, t.x, t.y), fmaf(v.z, t.x, t.y),
                          fmaf(v.w, t.x, t.y));
    }
  } else {
    for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n; i += stride) {
      const float2 t = __ldg(scale_shift + (i / hw) % C);
      y[i] = fmaf(__ldg(x + i), t.x, t.y);
    }
  }
}

static bool is_vector(const kopt_tensor& t, int64_t C) {
  return t.dtype == KOPT_FLOAT32 && t.ndim == 1 && t.shape[0] == C;
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            cudaStream_t stream) {
  const int first_buffer = AFFINE ? 3 : 1;
  if (n_out < 1 || n_in < first_buffer) return 1;
  const kopt_tensor& x = in[0];
  const kopt_tensor& y = out[0];
  if (x.dtype != KOPT_FLOAT32 || y.dtype != KOPT_FLOAT32 || x.ndim < 2) return 2;
  if (!kopt_is_contiguous(x) || !kopt_is_contiguous(y)) return 3;
  const int64_t N = x.shape[0], C = x.shape[1];
  int64_t hw = 1;
  for (int d = 2; d < x.ndim; ++d) hw *= x.shape[d];
  const int64_t n = N * C * hw;
  if (kopt_numel(y) != n) return 4;
  const float* w = nullptr;
  const float* b = nullptr;
  if (AFFINE) {
    if (!is_vector(in[1], C) || !is_vector(in[2], C)) return 5;
    w = static_cast<const float*>(in[1].data);
    b = static_cast<const float*>(in[2].data);
  }
  // The running statistics, when the module tracks them (all three or none).
  float* rm = nullptr;
  float* rv = nullptr;
  long long* batches = nullptr;
  if (n_in >= first_buffer + 3) {
    const kopt_tensor& t = in[first_buffer + 2];
    if (!is_vector(in[first_buffer], C) || !is_vector(in[first_buffer + 1], C) ||
        t.dtype != KOPT_INT64 || kopt_numel(t) != 1)
      return 5;
    rm = static_cast<float*>(in[first_buffer].data);
    rv = static_cast<float*>(in[first_buffer + 1].data);
    batches = static_cast<long long*>(t.data);
  } else if (n_in != first_buffer) {
    return 5;
  }
  if (n == 0 || C == 0) return 0;
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 6;
  if (C > 65535) return 6;  // grid.y
  const int64_t tiles_per_plane = (hw + TILE - 1) / TILE;
  const int64_t units = N * tiles_per_plane;
  int64_t split = ((int64_t)sms * WAVES + C - 1) / C;
  if (split > units) split = units;
  if (split < 1) split = 1;
  char* scratch = static_cast<char*>(
      kopt_scratch(sizeof(double2) * (size_t)(C * split) + sizeof(float2) * (size_t)C));
  if (!scratch) return 8;
  double2* partial = reinterpret_cast<double2*>(scratch);
  float2* scale_shift = reinterpret_cast<float2*>(scratch + sizeof(double2) * (size_t)(C * split));
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  const bool vec = hw % 4 == 0 && reinterpret_cast<uintptr_t>(xp) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(yp) % 16 == 0;
  const dim3 grid((unsigned)split, (unsigned)C);
  if (vec)
    bn_stats<true><<<grid, THREADS, 0, stream>>>(xp, C, hw, tiles_per_plane, units, partial);
  else
    bn_stats<false><<<grid, THREADS, 0, stream>>>(xp, C, hw, tiles_per_plane, units, partial);
  bn_finish<<<(unsigned)((C + 127) / 128), 128, 0, stream>>>(
      xp, partial, (int)split, C, hw, (double)(N * hw), w, b, rm, rv, batches, scale_shift);
  int64_t blocks = (int64_t)sms * APPLY_BLOCKS_PER_SM;
  const int64_t need = ((vec ? n / 4 : n) + THREADS - 1) / THREADS;
  if (blocks > need) blocks = need;
  if (vec)
    bn_apply<true><<<(unsigned)blocks, THREADS, 0, stream>>>(xp, yp, C, hw, n, scale_shift);
  else
    bn_apply<false><<<(unsigned)blocks, THREADS, 0, stream>>>(xp, yp, C, hw, n, scale_shift);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
