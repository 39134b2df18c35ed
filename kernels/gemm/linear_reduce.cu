// Template: a sum (or mean) over the output features of a linear layer,
// folded. y[m] = POST * act(PRE * R_n (A[m] . W[n] + b[n])), R = sum or mean
// over n, is by linearity PRE * (A[m] . w + beta) (/ N for the mean) with
// w[k] = sum_n W[n, k] and beta = sum_n b[n]: the [M, N] GEMM (2*M*N*K FLOPs)
// becomes a column sum of W (N*K) and a matrix-vector product (2*M*K).
// The weights are summed on every call, so a weight update between calls is
// honoured. ABI inputs: A [..., K] (leading dims folded into M rows), W [N, K]
// (KOPT_TRANS_B = 1, nn.Linear's weight) or B [K, N] (KOPT_TRANS_B = 0,
// A @ B), and the bias [N] when KOPT_BIAS; the output holds M values
// ([M], [M, 1], or A's leading dims with a kept 1). Contiguous float32.
// Slots (set by a planner) are listed below; see README.md.
//
// Three launches on the caller's stream, scratch from kopt_scratch:
//   wsum_partial  TRANS_B = 1: a grid of (column tiles, SPLIT) blocks, each
//                 thread summing four adjacent columns over a chunk of W's
//                 rows (float4 loads); TRANS_B = 0: a warp per row of B;
//   wsum_merge    a thread per column adds the SPLIT partials in a fixed
//                 order; one extra block sums the bias (fixed-order tree);
//   rows_dot      a warp per row of A: A[m] . w, then the epilogue.
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <kopt/scratch.h>
#include <math.h>
#include <stdint.h>

#define KOPT_TRANS_B 1              // slot: 1 W is [N, K] (nn.Linear); 0 B is [K, N] (A @ B)
#define KOPT_BIAS 1                 // slot: 1 in[2] is a bias [N] inside the reduction; 0 none
#define KOPT_MEAN 0                 // slot: 0 sum over the N features; 1 mean
#define KOPT_PRE_SCALE_X1000 1000   // slot: the reduction times this / 1000, before the activation
#define KOPT_EPILOGUE 0             // slot: activation: 0 none, 1 ReLU, 2 GELU (erf)
#define KOPT_POST_SCALE_X1000 1000  // slot: the activation times this / 1000

// kopt:knob THREADS 256 64..1024*2 threads per block of every pass
constexpr int THREADS = 256;
// kopt:knob UNROLL 8 {1,2,4,8,16} float4 loads in flight per lane in the row dot products
constexpr int UNROLL = 8;
// kopt:knob ROWS_PER_SPLIT 128 {32,64,128,256,512} rows of W each column-sum block adds
constexpr int ROWS_PER_SPLIT = 128;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

constexpr bool TRANS_B = KOPT_TRANS_B != 0;
constexpr bool BIAS = KOPT_BIAS != 0;
constexpr float PRE = (float)KOPT_PRE_SCALE_X1000 / 1000.0f;
constexpr float POST = (float)KOPT_POST_SCALE_X1000 / 1000.0f;
constexpr unsigned FULL = 0xffffffffu;

// TRANS_B: partial[s][k] = sum of W[n, k] over rows n of chunk s.
template <bool VEC>
__global__ void __launch_bounds__(THREADS)
    wsum_cols(const float* __restrict__ W, int64_t N, int64_t K, float* __restrict__ partial) {
  const int64_t n0 = (int64_t)blockIdx.y * ROWS_PER_SPLIT;
  const int64_t n1 = n0 + ROWS_PER_SPLIT < N ? n0 + ROWS_PER_SPLIT : N;
  float* dst = partial + (int64_t)blockIdx.y * K;
  if (VEC) {
    const int64_t c4 = (int64_t)blockIdx.x * THREADS + threadIdx.x;  // a float4 of columns
    if (c4 >= K / 4) return;
    const float4* w4 = reinterpret_cast<const float4*>(W) + c4;
    const int64_t ld4 = K / 4;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) {  // four rows in flight
      const float4 p = __ldg(w4 + n * ld4), q = __ldg(w4 + (n + 1) * ld4);
      const float4 r = __ldg(w4 + (n + 2) * ld4), t = __ldg(w4 + (n + 3) * ld4);
      a.x += (p.x + q.x) + (r.x + t.x);
      a.y += (p.y + q.y) + (r.y + t.y);
      a.z += (p.z + q.z) + (r.z + t.z);
      a.w += (p.w + q.w) + (r.w + t.w);
    }
    for (; n < n1; ++n) {
      const float4 p = __ldg(w4 + n * ld4);
      a.x += p.x;
      a.y += p.y;
      a.z += p.z;
      a.w += p.w;
    }
    reinterpret_cast<float4*>(dst)[c4] = a;
  } else {
    const int64_t c = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    if (c >= K) return;
    float a = 0.f;
    for (int64_t n = n0; n < n1; ++n) a += __ldg(W + n * K + c);
    dst[c] = a;
  }
}

// !TRANS_B: w[k] = sum over the row k of B [K, N], a warp per row.
__global__ void __launch_bounds__(THREADS)
    wsum_rows(const float* __restrict__ B, int64_t K, int64_t N, float* __restrict__ w) {
  const int64_t k = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (k >= K) return;
  const float* row = B + k * N;
  float a = 0.f;
  for (int64_t n = lane; n < N; n += 32) a += __ldg(row + n);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(FULL, a, o);
  if (lane == 0) w[k] = a;
}

// w[k] = the SPLIT partials of column k added in order (in double); the
// block after the columns' sums the bias into *beta.
__global__ void __launch_bounds__(THREADS)
    wsum_merge(const float* __restrict__ partial, int split, int64_t K, float* __restrict__ w,
               const float* __restrict__ bias, int64_t N, float* __restrict__ beta) {
  const int64_t col_blocks = (K + THREADS - 1) / THREADS;
  if ((int64_t)blockIdx.x < col_blocks) {
    const int64_t k = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    if (k >= K) return;  // split == 0 (no rows): w[k] = 0
    double a = 0.0;
    for (int s = 0; s < split; ++s) a += (double)partial[(int64_t)s * K + k];
    w[k] = (float)a;
    return;
  }
  __shared__ double acc[THREADS];
  double a = 0.0;
  if (bias)
    for (int64_t n = threadIdx.x; n < N; n += THREADS) a += (double)bias[n];
  acc[threadIdx.x] = a;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half >>= 1) {  // THREADS is a multiple of 32
    if ((int)threadIdx.x < half) acc[threadIdx.x] += acc[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *beta = (float)acc[0];
}

__device__ __forceinline__ float epilogue(float v) {
  v *= PRE;
  if (KOPT_EPILOGUE == 1) v = fmaxf(v, 0.f);
  if (KOPT_EPILOGUE == 2) v = 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
  return v * POST;
}

template <bool VEC>
__global__ void __launch_bounds__(THREADS)
    rows_dot(const float* __restrict__ A, const float* __restrict__ w,
             const float* __restrict__ beta, float inv_n, float* __restrict__ y, int64_t M,
             int64_t K) {
  const int lane = threadIdx.x & 31;
  const int64_t m = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
  if (m >= M) return;
  const float* a = A + m * K;
  float acc;
  if (VEC) {
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
    const int64_t k4 = K / 4;
#pragma unroll UNROLL
    for (int64_t i = lane; i < k4; i += 32) {
      const float4 p = __ldg(a4 + i), q = __ldg(w4 + i);
      s.x = fmaf(p.x, q.x, s.x);
      s.y = fmaf(p.y, q.y, s.y);
      s.z = fmaf(p.z, q.z, s.z);
      s.w = fmaf(p.w, q.w, s.w);
    }
    acc = (s.x + s.y) + (s.z + s.w);
  } else {
    acc = 0.f;
    for (int64_t i = lane; i < K; i += 32) acc = fmaf(__ldg(a + i), __ldg(w + i), acc);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(FULL, acc, o);
  if (lane == 0) {
    float r = acc + *beta;
    if (KOPT_MEAN) r *= inv_n;
    y[m] = epilogue(r);
  }
}

static bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            cudaStream_t stream) {
  if (n_in != (BIAS ? 3 : 2) || n_out != 1) return 1;
  const kopt_tensor& A = in[0];
  const kopt_tensor& W = in[1];
  const kopt_tensor& Y = out[0];
  if (A.dtype != KOPT_FLOAT32 || W.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32 || A.ndim < 1 ||
      W.ndim != 2)
    return 2;
  if (!kopt_is_contiguous(A) || !kopt_is_contiguous(W) || !kopt_is_contiguous(Y)) return 3;
  const int64_t K = A.shape[A.ndim - 1];
  const int64_t M = K > 0 ? kopt_numel(A) / K : 0;
  const int64_t N = TRANS_B ? W.shape[0] : W.shape[1];
  if ((TRANS_B ? W.shape[1] : W.shape[0]) != K || kopt_numel(Y) != M) return 4;
  const float* bias = nullptr;
  if (BIAS) {
    const kopt_tensor& b = in[2];
    if (b.dtype != KOPT_FLOAT32 || kopt_numel(b) != N || !kopt_is_contiguous(b)) return 5;
    bias = static_cast<const float*>(b.data);
  }
  if (M == 0) return 0;
  const float* ap = static_cast<const float*>(A.data);
  const float* wp = static_cast<const float*>(W.data);
  float* yp = static_cast<float*>(Y.data);
  const int64_t split = TRANS_B ? (N + ROWS_PER_SPLIT - 1) / ROWS_PER_SPLIT : 1;
  if (split > 65535) return 6;  // grid.y
  // Scratch: the partial column sums, w [K] (16-byte aligned), beta.
  const int64_t w_at = (split * K + 3) / 4 * 4;
  float* partial = static_cast<float*>(kopt_scratch(sizeof(float) * (size_t)(w_at + K + 4)));
  if (!partial) return 8;
  float* w = partial + w_at;
  float* beta = w + K;
  const int64_t col_blocks = (K + THREADS - 1) / THREADS;
  if (TRANS_B) {
    const bool vec = K % 4 == 0 && aligned16(wp);
    const int64_t cols = vec ? K / 4 : K;
    const dim3 grid((unsigned)((cols + THREADS - 1) / THREADS), (unsigned)split);
    if (N > 0) {
      if (vec)
        wsum_cols<true><<<grid, THREADS, 0, stream>>>(wp, N, K, partial);
      else
        wsum_cols<false><<<grid, THREADS, 0, stream>>>(wp, N, K, partial);
    }
    wsum_merge<<<(unsigned)(col_blocks + 1), THREADS, 0, stream>>>(partial, (int)split, K, w, bias,
                                                                   N, beta);
  } else {
    wsum_rows<<<(unsigned)((K * 32 + THREADS - 1) / THREADS), THREADS, 0, stream>>>(wp, K, N,
                                                                                    partial);
    wsum_merge<<<(unsigned)(col_blocks + 1), THREADS, 0, stream>>>(partial, 1, K, w, bias, N, beta);
  }
  const bool vec = K % 4 == 0 && aligned16(ap) && aligned16(w);
  const int64_t blocks = (M * 32 + THREADS - 1) / THREADS;
  const float inv_n = N > 0 ? 1.0f / (float)N : 0.f;
  if (vec)
    rows_dot<true><<<(unsigned)blocks, THREADS, 0, stream>>>(ap, w, beta, inv_n, yp, M, K);
  else
    rows_dot<false><<<(unsigned)blocks, THREADS, 0, stream>>>(ap, w, beta, inv_n, yp, M, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}
