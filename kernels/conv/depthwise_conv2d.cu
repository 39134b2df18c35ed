// Template: depthwise 2-D convolution over contiguous NCHW (or CHW) fp32,
// torch semantics (nn.Conv2d with groups == in_channels): output channel
// co = c * M + m convolves input channel c with its own KH x KW filter,
// M = out_channels / in_channels (the depth multiplier). ABI inputs: x
// [N, C, H, W], weight [C*M, 1, KH, KW], bias [C*M] when KOPT_BIAS; output
// y [N, C*M, OH, OW] with torch's size formula. The window, stride, padding,
// dilation, multiplier, bias and epilogue are slots set by a planner. See
// README.md next to this file.
//
// Tiled kernel: a block computes a tile of th*RY output rows x tw*V output
// columns of one output plane. It copies the tile's input footprint (with
// the halo; padding as 0) into shared memory with coalesced loads (float4
// when W % 4 == 0: scalar loads reached only half the bandwidth), then
// each thread computes RY consecutive rows x V columns (tx, tx+tw, ...):
// consecutive threads read consecutive shared words (conflict-free for
// SW = 1) and write consecutive outputs. Each shared input value is read
// once per thread and applied to every one of its RY rows that uses it
// (register blocking along y: (RY-1)*SH + (KH-1)*DH + 1 row reads for RY
// rows, 4.5 reads per output for 3x3 at RY = 4 instead of 9). tw, th shrink
// at runtime to small planes, to the shared-memory limit and to fill the
// GPU. The M output channels of one input tile are consecutive blocks (the
// re-reads hit L2). A direct kernel (loads through L1, window clipped)
// takes footprints too big for shared memory.
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <stdint.h>

#include <type_traits>

#define KOPT_KH 3        // slot: kernel height, >= 1
#define KOPT_KW 3        // slot: kernel width, >= 1
#define KOPT_SH 1        // slot: stride along H, >= 1
#define KOPT_SW 1        // slot: stride along W, >= 1
#define KOPT_PH 1        // slot: zero padding along H (both sides), >= 0
#define KOPT_PW 1        // slot: zero padding along W (both sides), >= 0
#define KOPT_DH 1        // slot: dilation along H, >= 1
#define KOPT_DW 1        // slot: dilation along W, >= 1
#define KOPT_MULT 1      // slot: depth multiplier M = out_channels / in_channels, >= 1
#define KOPT_BIAS 0      // slot: 1 bias [C*M] is input 2, 0 none. Values 0, 1
#define KOPT_EPILOGUE 0  // slot: activation after the bias: 0 none, 1 relu, 2 relu6 (hardtanh 0..6)

// kopt:knob THREADS 128 64..1024*2 most threads per block (the tile shrinks on small planes)
constexpr int THREADS = 128;
// kopt:knob TW 32 {8,16,32,64} most threads along W; the rest of the block goes along H
constexpr int TW = 32;
// kopt:knob V 4 {1,2,4,8} outputs each thread computes along W (columns tx, tx+tw, ...)
constexpr int V = 4;
// kopt:knob RY 4 {1,2,4,8} consecutive output rows per thread; each input row is read once for all
constexpr int RY = 4;
// kopt:knob BLOCKS_PER_SM 4 {1,2,4,8} tiles shrink until the grid has this many blocks per SM
constexpr int BLOCKS_PER_SM = 4;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024 && TW <= THREADS
// kopt:constraint V * RY <= 16

constexpr int KH = KOPT_KH, KW = KOPT_KW, SH = KOPT_SH, SW = KOPT_SW;
constexpr int PH = KOPT_PH, PW = KOPT_PW, DH = KOPT_DH, DW = KOPT_DW;
constexpr int MULT = KOPT_MULT;
constexpr bool BIAS = KOPT_BIAS != 0;
constexpr int EPILOGUE = KOPT_EPILOGUE;
static_assert(KH >= 1 && KW >= 1 && SH >= 1 && SW >= 1, "kernel and stride are >= 1");
static_assert(PH >= 0 && PW >= 0 && DH >= 1 && DW >= 1, "padding >= 0, dilation >= 1");
static_assert(MULT >= 1, "the depth multiplier is >= 1");
static_assert(EPILOGUE >= 0 && EPILOGUE <= 2, "epilogue: 0 none, 1 relu, 2 relu6");
static_assert((TW & (TW - 1)) == 0 && (THREADS & (THREADS - 1)) == 0, "powers of two");

// Input rows one thread's RY output rows read.
constexpr int ROWS = (RY - 1) * SH + (KH - 1) * DH + 1;
// Fully unrolled row-reuse loops (taps in registers) for small windows; a
// plain loop with the taps in shared memory otherwise.
constexpr bool UNROLLED = KH * KW <= 32 && ROWS * KW * RY <= 1024;
constexpr int SMEM_LIMIT = 48 * 1024;

__device__ __forceinline__ float activate(float v) {
  if (EPILOGUE == 1) return v < 0.f ? 0.f : v;  // NaN passes, as torch's relu
  if (EPILOGUE == 2) return v < 0.f ? 0.f : (v > 6.f ? 6.f : v);
  return v;
}

// Block = tw x th threads; blockIdx.x = ((input plane, tile row), tile col, m).
// VEC (W % 4 == 0, x 16-byte aligned): the tile's rows start at the 4-aligned
// column at or left of the footprint, `off` columns early, and are copied
// with float4 loads (a float4 is all inside the row or all outside);
// `pitch` (a multiple of 4) leaves room for off <= 3. Otherwise off = 0,
// pitch = in_cols and scalar loads.
// (Half the SM's threads resident at least, said explicitly: without it ptxas
// held THREADS = 1024 to 32 registers and spilled.)
template <bool VEC>
__global__ void __launch_bounds__(THREADS, 1024 / THREADS)
    dw_tiled(const float* __restrict__ x, const float* __restrict__ w,
             const float* __restrict__ bias, float* __restrict__ y, int CM, int H, int W, int OH,
             int OW, int tw, int th, int tiles_h, int tiles_w, int in_rows, int pitch) {
  extern __shared__ __align__(16) float tile[];  // [in_rows][pitch]
  __shared__ float taps[UNROLLED ? 1 : KH * KW];
  const int tx = threadIdx.x % tw, ty = threadIdx.x / tw;
  const int nthreads = tw * th;
  long long b = blockIdx.x;
  const int m = (int)(b % MULT);
  b /= MULT;
  const int tc = (int)(b % tiles_w);
  b /= tiles_w;
  const int tr = (int)(b % tiles_h);
  const long long in_plane = b / tiles_h;  // n * C + c
  const long long out_plane = in_plane * MULT + m;
  const int co = (int)(out_plane % CM);
  const float* wf = w + (long long)co * (KH * KW);
  const int oh0 = tr * th * RY, ow0 = tc * tw * V;
  const int h0 = oh0 * SH - PH, w0 = ow0 * SW - PW;
  const float* xp = x + in_plane * (long long)H * W;
  // The footprint, LOADS loads in flight per thread before their stores.
  constexpr int L = VEC ? 4 : 1, LOADS = VEC ? 4 : 8;
  using Vec = typename std::conditional<VEC, float4, float>::type;
  const int wa = VEC ? (w0 >= 0 ? w0 & ~3 : -((-w0 + 3) & ~3)) : w0;  // first column copied
  const int off = w0 - wa;
  const int cl = pitch / L, n = in_rows * cl;
  for (int k0 = threadIdx.x; k0 < n; k0 += LOADS * nthreads) {
    Vec v[LOADS];
#pragma unroll
    for (int j = 0; j < LOADS; ++j) {
      const int k = k0 + j * nthreads;
      const int r = k / cl, c = wa + (k - r * cl) * L, h = h0 + r;
      v[j] = Vec{};
      if (k < n && h >= 0 && h < H && c >= 0 && c < W)
        v[j] = __ldg(reinterpret_cast<const Vec*>(xp + (long long)h * W + c));
    }
#pragma unroll
    for (int j = 0; j < LOADS; ++j) {
      const int k = k0 + j * nthreads;
      if (k < n) reinterpret_cast<Vec*>(tile)[k] = v[j];
    }
  }
  if (!UNROLLED)
    for (int k = threadIdx.x; k < KH * KW; k += nthreads) taps[k] = __ldg(wf + k);
  __syncthreads();

  const float b0 = BIAS ? __ldg(bias + co) : 0.f;
  float acc[RY][V];
#pragma unroll
  for (int i = 0; i < RY; ++i)
#pragma unroll
    for (int v = 0; v < V; ++v) acc[i][v] = b0;
  const float* base = tile + ty * RY * SH * pitch + off + tx * SW;
  if constexpr (UNROLLED) {
    float f[KH * KW];
#pragma unroll
    for (int k = 0; k < KH * KW; ++k) f[k] = __ldg(wf + k);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const float val = base[r * pitch + v * tw * SW + kw * DW];
#pragma unroll
          for (int i = 0; i < RY; ++i) {
            const int d = r - i * SH;  // = kh * DH for the rows this one feeds
            if (d >= 0 && d % DH == 0 && d / DH < KH)
              acc[i][v] = fmaf(f[(d / DH) * KW + kw], val, acc[i][v]);
          }
        }
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < RY; ++i)
      for (int kh = 0; kh < KH; ++kh) {
        const float* row = base + (i * SH + kh * DH) * pitch;
        for (int kw = 0; kw < KW; ++kw) {
          const float t = taps[kh * KW + kw];
#pragma unroll
          for (int v = 0; v < V; ++v) acc[i][v] = fmaf(t, row[v * tw * SW + kw * DW], acc[i][v]);
        }
      }
  }
  float* yp = y + out_plane * (long long)OH * OW;
#pragma unroll
  for (int i = 0; i < RY; ++i) {
    const int oh = oh0 + ty * RY + i;
    if (oh >= OH) break;
    float* yr = yp + (long long)oh * OW;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int ow = ow0 + tx + v * tw;
      if (ow < OW) yr[ow] = activate(acc[i][v]);
    }
  }
}

// Grid-stride over (output plane, oh, ow): window clipped to the input.
__global__ void __launch_bounds__(THREADS)
    dw_direct(const float* __restrict__ x, const float* __restrict__ w,
              const float* __restrict__ bias, float* __restrict__ y, long long out_planes, int CM,
              int H, int W, int OH, int OW) {
  const long long total = out_planes * OH * OW;
  const long long step = (long long)gridDim.x * THREADS;
  for (long long idx = (long long)blockIdx.x * THREADS + threadIdx.x; idx < total; idx += step) {
    const int ow = (int)(idx % OW);
    const long long t = idx / OW;
    const int oh = (int)(t % OH);
    const long long plane = t / OH;
    const int co = (int)(plane % CM);
    const float* xp = x + (plane / MULT) * (long long)H * W;
    const float* wf = w + (long long)co * KH * KW;
    float acc = BIAS ? __ldg(bias + co) : 0.f;
    const int hs = oh * SH - PH, ws = ow * SW - PW;
    for (int kh = 0; kh < KH; ++kh) {
      const int h = hs + kh * DH;
      if (h < 0 || h >= H) continue;
      const float* xr = xp + (long long)h * W;
      for (int kw = 0; kw < KW; ++kw) {
        const int ww = ws + kw * DW;
        if (ww >= 0 && ww < W) acc = fmaf(__ldg(wf + kh * KW + kw), __ldg(xr + ww), acc);
      }
    }
    y[idx] = activate(acc);
  }
}

// torch's convolution output size; <= 0 when the window does not fit.
static long long conv_size(long long in, int k, int s, int p, int d) {
  const long long num = in + 2LL * p - (long long)d * (k - 1) - 1;
  return num < 0 ? 0 : num / s + 1;
}

// The tile's input rows and its shared-memory row pitch (floats).
static long long tile_rows(int th) {
  return ((long long)th * RY - 1) * SH + (long long)(KH - 1) * DH + 1;
}
static long long tile_pitch(int tw, bool vec) {
  const long long cols = ((long long)tw * V - 1) * SW + (long long)(KW - 1) * DW + 1;
  return vec ? (cols + 3 + 3) / 4 * 4 : cols;
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 2 + (BIAS ? 1 : 0) || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  const kopt_tensor& Wt = in[1];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Wt.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if ((X.ndim != 4 && X.ndim != 3) || Y.ndim != X.ndim || Wt.ndim != 4) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Wt) || !kopt_is_contiguous(Y)) return 3;
  const int nd = X.ndim;
  const long long N = nd == 4 ? X.shape[0] : 1;
  const long long C = X.shape[nd - 3], H = X.shape[nd - 2], W = X.shape[nd - 1];
  const long long CM = C * MULT;
  if (Wt.shape[0] != CM || Wt.shape[1] != 1 || Wt.shape[2] != KH || Wt.shape[3] != KW) return 4;
  if (BIAS) {
    const kopt_tensor& B = in[2];
    if (B.dtype != KOPT_FLOAT32 || B.ndim != 1 || B.shape[0] != CM || !kopt_is_contiguous(B))
      return 4;
  }
  const long long OH = conv_size(H, KH, SH, PH, DH), OW = conv_size(W, KW, SW, PW, DW);
  if ((nd == 4 && Y.shape[0] != N) || Y.shape[nd - 3] != CM || Y.shape[nd - 2] != OH ||
      Y.shape[nd - 1] != OW)
    return 4;
  if (OH <= 0 || OW <= 0) return 4;
  if (H > 0x3fffffffLL || W > 0x3fffffffLL || CM > 0x7fffffffLL) return 5;
  const long long out_planes = N * CM;
  if (out_planes == 0) return 0;

  const float* xs = static_cast<const float*>(X.data);
  const float* ws = static_cast<const float*>(Wt.data);
  const float* bs = BIAS ? static_cast<const float*>(in[2].data) : nullptr;
  float* ys = static_cast<float*>(Y.data);
  cudaStream_t st = (cudaStream_t)stream;
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);

  // Tile: tw threads along W (a power of two covering OW / V, at most TW),
  // th along H (covering OH / RY, at most THREADS / tw).
  const bool vec = W % 4 == 0 && (reinterpret_cast<uintptr_t>(xs) & 15) == 0;
  auto footprint_bytes = [&](int a, int b) { return tile_rows(b) * tile_pitch(a, vec) * 4; };
  int tw = 1, th = 1;
  while (tw < TW && (long long)tw * V < OW) tw *= 2;
  while (tw * th * 2 <= THREADS && (long long)th * RY < OH) th *= 2;
  auto blocks_of = [&](int a, int b) {
    const long long tiles_w = (OW + (long long)a * V - 1) / ((long long)a * V);
    const long long tiles_h = (OH + (long long)b * RY - 1) / ((long long)b * RY);
    return out_planes * tiles_w * tiles_h;
  };
  // Smaller tiles where the footprint exceeds shared memory or the grid is
  // short of BLOCKS_PER_SM blocks per SM (rows first: columns keep stores wide).
  while (footprint_bytes(tw, th) > SMEM_LIMIT && (th > 1 || tw > 1)) {
    if (th > 1)
      th /= 2;
    else
      tw /= 2;
  }
  while (blocks_of(tw, th) < (long long)sms * BLOCKS_PER_SM && tw * th > 64) {
    if (th > 1)
      th /= 2;
    else
      tw /= 2;
  }
  const long long tiles_w = (OW + (long long)tw * V - 1) / ((long long)tw * V);
  const long long tiles_h = (OH + (long long)th * RY - 1) / ((long long)th * RY);
  const long long blocks = blocks_of(tw, th);
  const long long smem = footprint_bytes(tw, th);
  if (smem <= SMEM_LIMIT && blocks <= 0x7fffffffLL) {
    const int rows = (int)tile_rows(th), pitch = (int)tile_pitch(tw, vec);
    if (vec)
      dw_tiled<true><<<(unsigned)blocks, tw * th, (size_t)smem, st>>>(
          xs, ws, bs, ys, (int)CM, (int)H, (int)W, (int)OH, (int)OW, tw, th, (int)tiles_h,
          (int)tiles_w, rows, pitch);
    else
      dw_tiled<false><<<(unsigned)blocks, tw * th, (size_t)smem, st>>>(
          xs, ws, bs, ys, (int)CM, (int)H, (int)W, (int)OH, (int)OW, tw, th, (int)tiles_h,
          (int)tiles_w, rows, pitch);
    return (int)cudaGetLastError();
  }
  const long long total = out_planes * OH * OW;
  long long grid = (total + THREADS - 1) / THREADS;
  if (grid > (long long)sms * 16) grid = (long long)sms * 16;
  dw_direct<<<(unsigned)grid, THREADS, 0, st>>>(xs, ws, bs, ys, out_planes, (int)CM, (int)H, (int)W,
                                                (int)OH, (int)OW);
  return (int)cudaGetLastError();
}
