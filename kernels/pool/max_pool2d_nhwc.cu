// Template: 2-D max pooling over channels-last (NHWC) fp32 with a
// convolution's epilogue folded in: y = act(max_pool2d(x) + bias[c]), no
// indices. x is an NHWC activation as its contiguous [N, H, W, C] view, y
// the pooled [N, OH, OW, C] view; torch semantics (dilation 1, -inf
// padding, NaN in a window is the result). See README.md next to this file.
//
// Why the bias and activation can come after the max: fl(v + b) and a
// non-decreasing activation are monotone in v, so the window's max of
// act(v + b) is act(max(v) + b), bit for bit. A channels-last replay then
// runs the convolution without its bias (PyTorch adds a convolution's bias
// in a separate pass over the whole output) and this kernel reads the
// convolution's output once and writes the pooled result once, with no
// int64 indices (max_pool2d on CUDA writes them even when nothing reads
// them) and no activation pass.
//
// Each thread computes VEC consecutive channels (float4 when VEC = 4 and C
// allows) of ITEMS output pixels; a warp's lanes cover consecutive channel
// groups, then pixels, so every window row it reads is contiguous along C.
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <math.h>
#include <stdint.h>

// Slot and knob lines stay one line each (kernels/README.md).
// clang-format off
#define KOPT_KH 2  // slot: window height, >= 1
#define KOPT_KW 2  // slot: window width, >= 1
#define KOPT_SH 2  // slot: stride along H, >= 1 (torch: stride defaults to the kernel size)
#define KOPT_SW 2  // slot: stride along W, >= 1
#define KOPT_PH 0  // slot: padding along H, 0 <= PH <= KH / 2
#define KOPT_PW 0  // slot: padding along W, 0 <= PW <= KW / 2
#define KOPT_CEIL_MODE 0  // slot: 1 output size rounds up (a last partial window), 0 down. Values 0, 1
#define KOPT_BIAS 1  // slot: 1 in[1] is a bias of shape [C] added after the max (a convolution's bias); 0 none
#define KOPT_ACT 1  // slot: applied last: 0 none, 1 ReLU, 2 ReLU6 (hardtanh to [0, 6])

// kopt:knob THREADS 256 {128,256,512} threads per block
constexpr int THREADS = 256;
// kopt:knob ITEMS 2 {1,2,4} output pixels per thread (all their window loads issued before any max): reads in flight vs registers and blocks
constexpr int ITEMS = 2;
// kopt:knob VEC 4 {1,4} channels per thread: 4 float4 loads and stores where C % 4 == 0 and the tensors are 16-byte aligned (else 1 runs); 1 scalar
constexpr int VEC = 4;
// clang-format on

constexpr int KH = KOPT_KH, KW = KOPT_KW, SH = KOPT_SH, SW = KOPT_SW, PH = KOPT_PH, PW = KOPT_PW;
constexpr bool CEIL_MODE = KOPT_CEIL_MODE != 0;
constexpr bool HAS_BIAS = KOPT_BIAS != 0;
constexpr int ACT = KOPT_ACT;
static_assert(KH >= 1 && KW >= 1 && SH >= 1 && SW >= 1, "window and stride are >= 1");
static_assert(PH >= 0 && PW >= 0 && 2 * PH <= KH && 2 * PW <= KW,
              "padding is at most half the window");
static_assert(ACT >= 0 && ACT <= 2, "activation 0, 1 or 2");
static_assert(VEC == 1 || VEC == 4, "VEC is 1 or 4");

__device__ __forceinline__ void max_step(float& m, float v) {
  if (v > m || v != v) m = v;  // NaN sticks, like torch
}

__device__ __forceinline__ float finish(float m, float b) {
  float v = HAS_BIAS ? m + b : m;
  if (ACT == 1) v = v > 0.f ? v : (v != v ? v : 0.f);  // NaN passes, as torch's relu
  if (ACT == 2) v = v != v ? v : fminf(fmaxf(v, 0.f), 6.f);
  return v;
}

template <int L>
struct Lanes;
template <>
struct Lanes<1> {
  using T = float;
  static __device__ __forceinline__ T fill(float v) { return v; }
  static __device__ __forceinline__ void max(T& m, T v) { max_step(m, v); }
  static __device__ __forceinline__ T finish_all(T m, const float* b) {
    return finish(m, HAS_BIAS ? __ldg(b) : 0.f);
  }
};
template <>
struct Lanes<4> {
  using T = float4;
  static __device__ __forceinline__ T fill(float v) { return make_float4(v, v, v, v); }
  static __device__ __forceinline__ void max(T& m, T v) {
    max_step(m.x, v.x);
    max_step(m.y, v.y);
    max_step(m.z, v.z);
    max_step(m.w, v.w);
  }
  static __device__ __forceinline__ T finish_all(T m, const float* b) {
    float4 bb = HAS_BIAS ? __ldg(reinterpret_cast<const float4*>(b)) : make_float4(0, 0, 0, 0);
    return make_float4(finish(m.x, bb.x), finish(m.y, bb.y), finish(m.z, bb.z), finish(m.w, bb.w));
  }
};

// Flat output index q over (n, oh, ow, channel group g), g fastest; block b
// owns q in [b * THREADS * ITEMS, (b + 1) * THREADS * ITEMS), item k of
// thread t is q = base + k * THREADS + t (a warp: consecutive q).
template <int L>
__global__ void __launch_bounds__(THREADS)
    pool_nhwc(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
              int H, int W, int OH, int OW, int C, int64_t total) {
  using Op = Lanes<L>;
  using T = typename Op::T;
  const int G = C / L;
  const int64_t base = (int64_t)blockIdx.x * THREADS * ITEMS + threadIdx.x;
  T m[ITEMS];
  int gi[ITEMS];
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    m[k] = Op::fill(-INFINITY);
    gi[k] = -1;
    const int64_t q = base + (int64_t)k * THREADS;
    if (q >= total) continue;
    const int g = (int)(q % G);
    int64_t t = q / G;
    const int ow = (int)(t % OW);
    t /= OW;
    const int oh = (int)(t % OH);
    const int64_t n = t / OH;
    gi[k] = g;
    const int hs = oh * SH - PH, ws = ow * SW - PW;
    const T* xn = reinterpret_cast<const T*>(x + n * H * (int64_t)W * C) + g;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const int h = hs + kh;
      if (h < 0 || h >= H) continue;
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const int w = ws + kw;
        if (w < 0 || w >= W) continue;
        Op::max(m[k], __ldg(xn + ((int64_t)h * W + w) * G));
      }
    }
  }
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    if (gi[k] < 0) continue;
    const int64_t q = base + (int64_t)k * THREADS;
    reinterpret_cast<T*>(y)[q] = Op::finish_all(m[k], bias + (int64_t)gi[k] * L);
  }
}

// torch's pooling_output_shape (dilation 1).
static long long pooled_size(long long in, int k, int s, int p) {
  const long long num = in + 2LL * p - k + (CEIL_MODE ? s - 1 : 0);
  long long o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (CEIL_MODE && (o - 1) * s >= in + p) --o;
  return o;
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != (HAS_BIAS ? 2 : 1) || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if (X.ndim != 4 || Y.ndim != 4) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const long long N = X.shape[0], H = X.shape[1], W = X.shape[2], C = X.shape[3];
  const long long OH = pooled_size(H, KH, SH, PH), OW = pooled_size(W, KW, SW, PW);
  if (Y.shape[0] != N || Y.shape[1] != OH || Y.shape[2] != OW || Y.shape[3] != C) return 4;
  if (OH <= 0 || OW <= 0) return 4;
  const float* b = nullptr;
  if (HAS_BIAS) {
    const kopt_tensor& B = in[1];
    if (B.dtype != KOPT_FLOAT32) return 2;
    if (B.ndim != 1 || B.shape[0] != C || !kopt_is_contiguous(B)) return 4;
    b = static_cast<const float*>(B.data);
  }
  if (H > 0x3fffffffLL || W > 0x3fffffffLL || C > 0x3fffffffLL) return 5;
  const long long total1 = N * OH * OW * C;
  if (total1 == 0) return 0;
  if (H == 0 || W == 0) return 4;
  const bool vec = VEC == 4 && C % 4 == 0 && reinterpret_cast<uintptr_t>(X.data) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(Y.data) % 16 == 0 &&
                   (!HAS_BIAS || reinterpret_cast<uintptr_t>(b) % 16 == 0);
  const long long total = vec ? total1 / 4 : total1;
  const long long per_block = (long long)THREADS * ITEMS;
  const long long blocks = (total + per_block - 1) / per_block;
  if (blocks > 0x7fffffffLL) return 5;
  const float* xs = static_cast<const float*>(X.data);
  float* ys = static_cast<float*>(Y.data);
  cudaStream_t st = (cudaStream_t)stream;
  if (vec)
    pool_nhwc<4><<<(unsigned)blocks, THREADS, 0, st>>>(xs, b, ys, (int)H, (int)W, (int)OH, (int)OW,
                                                       (int)C, total);
  else
    pool_nhwc<1><<<(unsigned)blocks, THREADS, 0, st>>>(xs, b, ys, (int)H, (int)W, (int)OH, (int)OW,
                                                       (int)C, total);
  return (int)cudaGetLastError();
}
