// Template: BatchNorm in training mode over channels-last float32 values:
// x is a contiguous [..., C] tensor with the channels last (an NHWC
// activation as its [N, H, W, C] view, a BatchNorm1d input [N, C]), so
// rows = numel / C. Normalizes with the batch's per-channel mean and biased
// variance, updates the running statistics as torch does, and can add a
// residual and apply a ReLU as it stores (a conv net's BN -> ReLU and BN ->
// + identity -> ReLU in one pass over the output).
//
// ABI inputs, in order: x; weight and bias [C] when KOPT_AFFINE;
// running_mean and running_var [C] when KOPT_RUNNING (updated in place);
// num_batches_tracked (int64, one element, incremented) when KOPT_TRACKED;
// a residual of x's shape, contiguous, when KOPT_RESIDUAL. Output: y of x's
// shape, contiguous; with KOPT_OUT_NCHW, x is an NHWC activation's
// [N, H, W, C] view and y the NCHW tensor [N, C, H, W] (the residual stays
// in x's layout): the conversion back to NCHW a channels-last network pays
// at its return is done by the apply pass. See README.md next to this file.
//
// Three launches on the caller's stream:
//   stats    a grid of (row blocks, channel chunks): every thread owns a
//            fixed group of channels (4 with float4 loads when C % 4 == 0
//            and the pointers are 16-byte aligned) and a row slot, and sums
//            x - K and its square over its rows (K = row 0's value of the
//            channel: the same shift in every block, so the blocks' sums
//            add exactly); the block's row slots merge in double in a fixed
//            order into scratch;
//   finish   a block per channel adds the blocks' partials in a fixed order
//            (the result does not depend on timing), folds scale and shift,
//            and updates the running statistics;
//   apply    the same thread layout, scale and shift held in registers:
//            y = act(x * scale + shift [+ residual]); with KOPT_OUT_NCHW a
//            block takes a 64 (rows) x 64 (channels) tile of an image:
//            float4 reads along the channels, the results transposed in
//            shared memory, written along the rows of y's channel planes.
// x is read twice (once more in L2 where it fits): about 2/3 of the memory
// floor of one read and one write on tensors beyond the L2.
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <kopt/scratch.h>
#include <math.h>
#include <stdint.h>

#define KOPT_AFFINE 1                   // slot: 1 weight and bias follow x; 0 no affine transform
#define KOPT_RUNNING 1                  // slot: 1 running_mean and running_var follow; 0 none
#define KOPT_TRACKED 1                  // slot: 1 num_batches_tracked follows them (+1); 0 none
#define KOPT_EPS_E12 10000000           // slot: eps x 1e12 rounded (1e-5 -> 10000000)
#define KOPT_MOMENTUM_E12 100000000000  // slot: momentum x 1e12 rounded (0.1 -> 100000000000)
#define KOPT_RESIDUAL 0                 // slot: 1 a tensor of x's shape (the last input) is added
#define KOPT_ACT 0                      // slot: 0 none, 1 ReLU (applied last)
#define KOPT_OUT_NCHW 0  // slot: 1 x is [N, H, W, C] and y is written as [N, C, H, W]

// kopt:knob THREADS 256 {128,256,512} threads per block of the statistics and apply passes
constexpr int THREADS = 256;
// kopt:knob UNROLL 4 {1,2,4,8} rows in flight per thread (loads issued before any is used)
constexpr int UNROLL = 4;
// kopt:knob WAVES 4 {1,2,4,8} statistics blocks per SM (rows split to fill the GPU)
constexpr int WAVES = 4;
// kopt:knob APPLY_BLOCKS_PER_SM 8 {2,4,8,16} blocks per SM of the apply pass
constexpr int APPLY_BLOCKS_PER_SM = 8;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 512

constexpr bool AFFINE = KOPT_AFFINE != 0;
constexpr bool RUNNING = KOPT_RUNNING != 0;
constexpr bool TRACKED = RUNNING && KOPT_TRACKED != 0;
constexpr bool RESIDUAL = KOPT_RESIDUAL != 0;
constexpr int ACT = KOPT_ACT;
constexpr bool OUT_NCHW = KOPT_OUT_NCHW != 0;
constexpr double EPS = (double)KOPT_EPS_E12 * 1e-12;
constexpr double MOMENTUM = (double)KOPT_MOMENTUM_E12 * 1e-12;

// W channels per thread: a float4 (W = 4) or one float (W = 1).
template <int W>
struct Vec;
template <>
struct Vec<4> {
  static __device__ __forceinline__ void load(const float* p, float* v) {
    const float4 q = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
  }
  static __device__ __forceinline__ void store(float* p, const float* v) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  }
};
template <>
struct Vec<1> {
  static __device__ __forceinline__ void load(const float* p, float* v) { v[0] = __ldg(p); }
  static __device__ __forceinline__ void store(float* p, const float* v) { p[0] = v[0]; }
};

// The thread layout both passes share: `chunk` channel groups of W side by
// side (blockIdx.y picks which chunk of C/W groups), THREADS / chunk row
// slots; block x takes rows [x * rows_per_block, +rows_per_block).
struct Layout {
  int64_t rows, C, rows_per_block;
  int chunk;
};

template <int W>
__global__ void __launch_bounds__(THREADS)
    bnc_stats(const float* __restrict__ x, Layout L, double* __restrict__ partial) {
  __shared__ double red[2 * W][THREADS];
  const int t = threadIdx.x;
  const int slots = THREADS / L.chunk;
  const int slot = t / L.chunk;
  const int64_t group = (int64_t)blockIdx.y * L.chunk + t % L.chunk;
  const bool active = slot < slots && group * W < L.C;
  const float* col = x + group * W;
  float K[W], s[W], ss[W];
#pragma unroll
  for (int k = 0; k < W; ++k) K[k] = 0.f, s[k] = 0.f, ss[k] = 0.f;
  if (active) {
    Vec<W>::load(col, K);
    const int64_t r0 = (int64_t)blockIdx.x * L.rows_per_block;
    const int64_t r1 = r0 + L.rows_per_block < L.rows ? r0 + L.rows_per_block : L.rows;
    const int64_t step = (int64_t)slots * UNROLL;
    for (int64_t r = r0 + slot; r < r1; r += step) {
      float v[UNROLL][W];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int64_t row = r + (int64_t)u * slots;
        if (row < r1) {
          Vec<W>::load(col + row * L.C, v[u]);
        } else {
#pragma unroll
          for (int k = 0; k < W; ++k) v[u][k] = K[k];
        }
      }
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const float d = v[u][k] - K[k];
          s[k] += d;
          ss[k] = fmaf(d, d, ss[k]);
        }
    }
  }
#pragma unroll
  for (int k = 0; k < W; ++k) {
    red[k][t] = s[k];
    red[W + k][t] = ss[k];
  }
  __syncthreads();
  if (slot == 0 && active) {
    // The row slots of this channel group, in a fixed order.
    double a[W], b[W];
#pragma unroll
    for (int k = 0; k < W; ++k) a[k] = 0.0, b[k] = 0.0;
    for (int sl = 0; sl < slots; ++sl)
#pragma unroll
      for (int k = 0; k < W; ++k) {
        a[k] += red[k][sl * L.chunk + t];
        b[k] += red[W + k][sl * L.chunk + t];
      }
    double* out = partial + ((int64_t)blockIdx.x * L.C + group * W) * 2;
#pragma unroll
    for (int k = 0; k < W; ++k) out[2 * k] = a[k], out[2 * k + 1] = b[k];
  }
}

// The batch statistics from `blocks` partials, the folded affine
// transform, and the running statistics' update. One block per channel: each thread sums a strided
// share of the per-block partials, then a fixed shared-memory tree (the same order every call). A
// thread per channel walking every partial is a serial chain of dependent loads (~57 us for 528
// partials on an H200).
constexpr int FINISH_THREADS = 256;
__global__ void __launch_bounds__(FINISH_THREADS)
    bnc_finish(const float* __restrict__ x, const double* __restrict__ partial, int64_t blocks,
               int64_t C, double count, const float* __restrict__ w, const float* __restrict__ b,
               float* __restrict__ running_mean, float* __restrict__ running_var,
               long long* __restrict__ batches, float* __restrict__ scale,
               float* __restrict__ shift) {
  __shared__ double red[2][FINISH_THREADS];
  const int64_t c = blockIdx.x;
  const int t = threadIdx.x;
  double s = 0.0, ss = 0.0;
  for (int64_t k = t; k < blocks; k += FINISH_THREADS) {
    s += partial[(k * C + c) * 2];
    ss += partial[(k * C + c) * 2 + 1];
  }
  red[0][t] = s;
  red[1][t] = ss;
  __syncthreads();
  for (int h = FINISH_THREADS / 2; h > 0; h /= 2) {
    if (t < h) {
      red[0][t] += red[0][t + h];
      red[1][t] += red[1][t + h];
    }
    __syncthreads();
  }
  if (t != 0) return;
  if (c == 0 && batches) *batches += 1;
  s = red[0][0];
  ss = red[1][0];
  const double K = (double)x[c];
  const double d = s / count;                        // mean - K
  const double var = fmax(ss / count - d * d, 0.0);  // biased: what normalizes
  const double mean = K + d;
  const float rstd = (float)(1.0 / sqrt(var + EPS));
  const float wc = w ? w[c] : 1.f;
  const float bc = b ? b[c] : 0.f;
  const float sc = rstd * wc;
  scale[c] = sc;
  shift[c] = bc - (float)mean * sc;
  if (running_mean) {
    const double unbiased = count > 1.0 ? var * count / (count - 1.0) : var;
    running_mean[c] = (float)((1.0 - MOMENTUM) * (double)running_mean[c] + MOMENTUM * mean);
    running_var[c] = (float)((1.0 - MOMENTUM) * (double)running_var[c] + MOMENTUM * unbiased);
  }
}

template <int W>
__global__ void __launch_bounds__(THREADS)
    bnc_apply(const float* __restrict__ x, const float* __restrict__ res, float* __restrict__ y,
              Layout L, const float* __restrict__ scale, const float* __restrict__ shift) {
  const int t = threadIdx.x;
  const int slots = THREADS / L.chunk;
  const int slot = t / L.chunk;
  const int64_t group = (int64_t)blockIdx.y * L.chunk + t % L.chunk;
  if (slot >= slots || group * W >= L.C) return;
  float sc[W], sh[W];
  Vec<W>::load(scale + group * W, sc);
  Vec<W>::load(shift + group * W, sh);
  const int64_t r0 = (int64_t)blockIdx.x * L.rows_per_block;
  const int64_t r1 = r0 + L.rows_per_block < L.rows ? r0 + L.rows_per_block : L.rows;
  const int64_t step = (int64_t)slots * UNROLL;
  for (int64_t r = r0 + slot; r < r1; r += step) {
    float v[UNROLL][W], e[UNROLL][W];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t row = r + (int64_t)u * slots;
      if (row < r1) {
        Vec<W>::load(x + row * L.C + group * W, v[u]);
        if (RESIDUAL) Vec<W>::load(res + row * L.C + group * W, e[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t row = r + (int64_t)u * slots;
      if (row >= r1) continue;
      float o[W];
#pragma unroll
      for (int k = 0; k < W; ++k) {
        float z = fmaf(v[u][k], sc[k], sh[k]);
        if (RESIDUAL) z += e[u][k];
        if (ACT == 1) z = fmaxf(z, 0.f);
        o[k] = z;
      }
      Vec<W>::store(y + row * L.C + group * W, o);
    }
  }
}

// KOPT_OUT_NCHW: image n's [HW, C] plane of x goes out as y's [C, HW]
// plane. Block (n * tiles_hw + i, j) takes the tile of TA rows from i * TA
// and TC channels from j * TC: float4 q of the tile (W = 4; element q with
// W = 1) to thread q % THREADS, normalized, residual added and activated as
// it is read, stored transposed in shared memory (one padding column); then
// element e of the TC x TA out tile to thread e % THREADS, along y's rows.
// Offsets inside an image are 32-bit (the launch checks HW * C < 2^31).
constexpr int TA = 64, TC = 64;
template <int W>
__global__ void __launch_bounds__(THREADS)
    bnc_apply_nchw(const float* __restrict__ x, const float* __restrict__ res,
                   float* __restrict__ y, int tiles_hw, int HW, int C,
                   const float* __restrict__ scale, const float* __restrict__ shift) {
  __shared__ float t[TC][TA + 1];
  constexpr int QC = TC / W;  // loads along the channels
  constexpr int Q = TA * QC;  // loads in a tile
  constexpr int LOADS = (Q + THREADS - 1) / THREADS;
  constexpr int STORES = (TA * TC + THREADS - 1) / THREADS;
  const int64_t n = blockIdx.x / tiles_hw;
  const int hw0 = (int)(blockIdx.x % tiles_hw) * TA, c0 = (int)blockIdx.y * TC;
  const int64_t plane = n * (int64_t)HW * C;
  x += plane, y += plane;
  if (RESIDUAL) res += plane;
  const int tid = threadIdx.x;
  float v[LOADS][W], e[LOADS][W];
#pragma unroll
  for (int k = 0; k < LOADS; ++k) {
    const int q = tid + k * THREADS;
    const int hw = hw0 + q / QC, c = c0 + (q % QC) * W;
    if (q < Q && hw < HW && c < C) {  // C % W == 0: a vector is wholly inside or out
      Vec<W>::load(x + hw * C + c, v[k]);
      if (RESIDUAL) Vec<W>::load(res + hw * C + c, e[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < LOADS; ++k) {
    const int q = tid + k * THREADS;
    const int r = q / QC, cl = (q % QC) * W;
    if (q < Q && hw0 + r < HW && c0 + cl < C) {
      float sc[W], sh[W];
      Vec<W>::load(scale + c0 + cl, sc);
      Vec<W>::load(shift + c0 + cl, sh);
#pragma unroll
      for (int i = 0; i < W; ++i) {
        float z = fmaf(v[k][i], sc[i], sh[i]);
        if (RESIDUAL) z += e[k][i];
        if (ACT == 1) z = fmaxf(z, 0.f);
        t[cl + i][r] = z;
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < STORES; ++k) {
    const int j = tid + k * THREADS;
    const int r = j / TA, col = j % TA;
    const int c = c0 + r, hw = hw0 + col;
    if (j < TA * TC && c < C && hw < HW) y[c * HW + hw] = t[r][col];
  }
}

static bool is_vector(const kopt_tensor& t, int64_t C) {
  return t.dtype == KOPT_FLOAT32 && t.ndim == 1 && t.shape[0] == C && kopt_is_contiguous(t);
}

static bool same_shape(const kopt_tensor& a, const kopt_tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

// The layout for `blocks_per_sm` blocks per SM over the channel chunks.
static Layout make_layout(int64_t rows, int64_t C, int W, int sms, int blocks_per_sm,
                          int64_t* row_blocks, int64_t* chunks) {
  const int64_t groups = C / W;
  Layout L;
  L.rows = rows;
  L.C = C;
  L.chunk = (int)(groups < THREADS ? groups : THREADS);
  *chunks = (groups + L.chunk - 1) / L.chunk;
  const int64_t slots = THREADS / L.chunk;
  int64_t want = (int64_t)sms * blocks_per_sm / *chunks;
  const int64_t most = (rows + slots - 1) / slots;  // at least one row per slot
  if (want > most) want = most;
  if (want < 1) want = 1;
  L.rows_per_block = (rows + want - 1) / want;
  *row_blocks = (rows + L.rows_per_block - 1) / L.rows_per_block;
  return L;
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            cudaStream_t stream) {
  const int n_expect =
      1 + (AFFINE ? 2 : 0) + (RUNNING ? 2 : 0) + (TRACKED ? 1 : 0) + (RESIDUAL ? 1 : 0);
  if (n_out < 1 || n_in != n_expect) return 1;
  const kopt_tensor& x = in[0];
  const kopt_tensor& y = out[0];
  if (x.dtype != KOPT_FLOAT32 || y.dtype != KOPT_FLOAT32 || x.ndim < 1) return 2;
  if (!kopt_is_contiguous(x) || !kopt_is_contiguous(y)) return 3;
  const int64_t C = x.shape[x.ndim - 1];
  const int64_t n = kopt_numel(x);
  if (kopt_numel(y) != n) return 4;
  if (OUT_NCHW && (x.ndim != 4 || y.ndim != 4 || y.shape[0] != x.shape[0] || y.shape[1] != C ||
                   y.shape[2] != x.shape[1] || y.shape[3] != x.shape[2]))
    return 4;
  int at = 1;
  const float* w = nullptr;
  const float* b = nullptr;
  if (AFFINE) {
    if (!is_vector(in[1], C) || !is_vector(in[2], C)) return 5;
    w = static_cast<const float*>(in[1].data);
    b = static_cast<const float*>(in[2].data);
    at = 3;
  }
  float* rm = nullptr;
  float* rv = nullptr;
  long long* batches = nullptr;
  if (RUNNING) {
    if (!is_vector(in[at], C) || !is_vector(in[at + 1], C)) return 5;
    rm = static_cast<float*>(in[at].data);
    rv = static_cast<float*>(in[at + 1].data);
    at += 2;
    if (TRACKED) {
      if (in[at].dtype != KOPT_INT64 || kopt_numel(in[at]) != 1) return 5;
      batches = static_cast<long long*>(in[at].data);
      ++at;
    }
  }
  const float* res = nullptr;
  if (RESIDUAL) {
    if (in[at].dtype != KOPT_FLOAT32 || !same_shape(in[at], x) || !kopt_is_contiguous(in[at]))
      return 4;
    res = static_cast<const float*>(in[at].data);
  }
  if (n == 0 || C == 0) return 0;
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 6;
  const float* xp = static_cast<const float*>(x.data);
  float* yp = static_cast<float*>(y.data);
  const int W = C % 4 == 0 && reinterpret_cast<uintptr_t>(xp) % 16 == 0 &&
                        reinterpret_cast<uintptr_t>(yp) % 16 == 0 &&
                        reinterpret_cast<uintptr_t>(res) % 16 == 0
                    ? 4
                    : 1;
  const int64_t rows = n / C;
  int64_t stat_blocks = 0, chunks = 0, apply_blocks = 0;
  const Layout S = make_layout(rows, C, W, sms, WAVES, &stat_blocks, &chunks);
  const Layout A = make_layout(rows, C, W, sms, APPLY_BLOCKS_PER_SM, &apply_blocks, &chunks);
  if (chunks > 65535 || stat_blocks > 0x7fffffff || apply_blocks > 0x7fffffff) return 6;
  // The NCHW apply's grid, checked before anything runs (a failure after
  // the statistics would leave the running statistics updated).
  const int64_t N = x.shape[0], HW = OUT_NCHW ? rows / N : 0;  // n > 0: N > 0
  const int64_t tiles_hw = (HW + TA - 1) / TA, tiles_c = (C + TC - 1) / TC;
  if (OUT_NCHW && (HW * C > 0x7fffffffLL || tiles_hw * N > 0x7fffffffLL || tiles_c > 65535))
    return 6;
  const dim3 grid((unsigned)(tiles_hw * N), (unsigned)tiles_c);
  // Partials [stat_blocks][C][2] doubles, then scale and shift [C] each.
  const size_t partial_bytes = sizeof(double) * 2 * (size_t)(stat_blocks * C);
  char* scratch = static_cast<char*>(kopt_scratch(partial_bytes + 2 * sizeof(float) * (size_t)C));
  if (!scratch) return 8;
  double* partial = reinterpret_cast<double*>(scratch);
  float* scale = reinterpret_cast<float*>(scratch + partial_bytes);
  float* shift = scale + C;
  if (W == 4)
    bnc_stats<4>
        <<<dim3((unsigned)stat_blocks, (unsigned)chunks), THREADS, 0, stream>>>(xp, S, partial);
  else
    bnc_stats<1>
        <<<dim3((unsigned)stat_blocks, (unsigned)chunks), THREADS, 0, stream>>>(xp, S, partial);
  bnc_finish<<<(unsigned)C, FINISH_THREADS, 0, stream>>>(xp, partial, stat_blocks, C, (double)rows,
                                                         w, b, rm, rv, batches, scale, shift);
  if (OUT_NCHW) {
    if (W == 4)
      bnc_apply_nchw<4>
          <<<grid, THREADS, 0, stream>>>(xp, res, yp, (int)tiles_hw, (int)HW, (int)C, scale, shift);
    else
      bnc_apply_nchw<1>
          <<<grid, THREADS, 0, stream>>>(xp, res, yp, (int)tiles_hw, (int)HW, (int)C, scale, shift);
  } else if (W == 4) {
    bnc_apply<4><<<dim3((unsigned)apply_blocks, (unsigned)chunks), THREADS, 0, stream>>>(
        xp, res, yp, A, scale, shift);
  } else {
    bnc_apply<1><<<dim3((unsigned)apply_blocks, (unsigned)chunks), THREADS, 0, stream>>>(
        xp, res, yp, A, scale, shift);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
