// Template: 2-D max or average pooling over contiguous NCHW (or CHW) fp32,
// torch semantics (max_pool2d / avg_pool2d, dilation 1). The window, stride,
// padding and modes are slots set by a planner; the output shape comes from
// out[0] and is checked against torch's formula. See README.md next to this
// file.
//
// Staged kernel (used when the input tile fits in shared memory and the
// output planes are big enough to fill a tile): a block computes a tile of
// th output rows x tw*V output columns of one plane; it first copies the
// input footprint of the tile ((th-1)*SH+KH rows x (tw*V-1)*SW+KW columns)
// into shared memory with coalesced loads (padding as -inf for max, 0 for
// avg), then each thread computes V outputs of one row, at columns tx,
// tx+tw, ... (consecutive threads -> consecutive outputs: coalesced stores,
// conflict-free shared reads for SW = 1, 2-way for SW = 2).
// Direct kernel otherwise (small planes, huge windows): a grid-stride loop,
// each thread V consecutive outputs of one row, reading the input through L1.
// Register kernel (ROWS > 0, the default): each thread computes ROWS x V
// outputs (V consecutive columns of ROWS consecutive rows); it loads its own
// V*SW input columns of every input row its windows touch, float4-wide where
// aligned, all before the first use (many reads in flight per thread), and
// takes the window's overlap into the neighbouring columns from the adjacent
// lanes by shuffles. No shared memory, no barrier: adjacent threads read
// adjacent bytes, and the rows two row groups share come from L2.
// Max: padding never wins (as -inf); NaN propagates (a NaN in the window is
// the result, like torch). Avg: fp32 sum, divided by the window size clipped
// to the padded input (count_include_pad) or to the input (otherwise).
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#define KOPT_MAX 0
#define KOPT_KH 3  // slot: window height, >= 1
#define KOPT_KW 3  // slot: window width, >= 1
#define KOPT_SH 2  // slot: stride along H, >= 1 (torch: stride defaults to the kernel size)
#define KOPT_SW 2  // slot: stride along W, >= 1
#define KOPT_PH 1  // slot: padding along H, 0 <= PH <= KH / 2
#define KOPT_PW 1  // slot: padding along W, 0 <= PW <= KW / 2
#define KOPT_COUNT_INCLUDE_PAD 1
#define KOPT_CEIL_MODE 0  // slot: 1 output size rounds up (a last partial window), 0 down. Values 0, 1

// kopt:knob THREADS 256 64..1024*2 threads per block: bigger tiles (less halo re-read) or more blocks
constexpr int THREADS = 64;
// kopt:knob V 2 {1,2,4,8} outputs each thread computes along W: more work and shared reuse per thread, fewer threads
constexpr int V = 8;
// kopt:knob BLOCKS_PER_SM 16 {4,8,16,32,64} grid cap of the direct kernel's grid-stride loop, in blocks per SM
constexpr int BLOCKS_PER_SM = 64;
// kopt:knob SMEM_KB 48 {16,32,48} most shared memory (KiB) a staged tile may use; larger footprints use the direct kernel
constexpr int SMEM_KB = 16;
// kopt:knob LOADS 4 {1,2,4,8} tile loads each thread issues before it stores any (loads in flight per thread)
constexpr int LOADS = 4;
// kopt:knob ROWS 2 {0,1,2,4} output rows per thread of the register kernel (0: the staged or direct kernel)
constexpr int ROWS = 0;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024
// kopt:constraint V * ROWS <= 8

constexpr bool IS_MAX = KOPT_MAX != 0;
constexpr int KH = KOPT_KH, KW = KOPT_KW, SH = KOPT_SH, SW = KOPT_SW, PH = KOPT_PH, PW = KOPT_PW;
constexpr bool INCLUDE_PAD = KOPT_COUNT_INCLUDE_PAD != 0;
constexpr bool CEIL_MODE = KOPT_CEIL_MODE != 0;
static_assert(KH >= 1 && KW >= 1 && SH >= 1 && SW >= 1, "window and stride are >= 1");
static_assert(PH >= 0 && PW >= 0 && 2 * PH <= KH && 2 * PW <= KW,
              "padding is at most half the window");
constexpr float PADV = IS_MAX ? -INFINITY : 0.f;
// fully unroll small windows only
constexpr int UNROLL_KW = KW <= 16 ? KW : 4;
constexpr int UNROLL_KH = KH * KW <= 64 ? KH : 1;

__device__ __forceinline__ void max_step(float& m, float v) {
  if (v > m || v != v) m = v;  // NaN sticks, like torch
}

// torch's divisor for the window starting at (hs, ws) (unclipped) on an H x W input.
__device__ __forceinline__ float avg_divisor(int hs, int ws, int H, int W) {
  int he = hs + KH, we = ws + KW;
  if (he > H + PH) he = H + PH;
  if (we > W + PW) we = W + PW;
  const int pool = (he - hs) * (we - ws);
  if (INCLUDE_PAD) return (float)pool;
  const int h0 = hs > 0 ? hs : 0, w0 = ws > 0 ? ws : 0;
  const int h1 = he < H ? he : H, w1 = we < W ? we : W;
  return (float)((h1 - h0) * (w1 - w0));
}

// Avg of an empty clipped window: torch writes 0.
__device__ __forceinline__ bool avg_empty(int hs, int ws, int H, int W) {
  const int h0 = hs > 0 ? hs : 0, w0 = ws > 0 ? ws : 0;
  int h1 = hs + KH, w1 = ws + KW;
  if (h1 > H) h1 = H;
  if (w1 > W) w1 = W;
  return h0 >= h1 || w0 >= w1;
}

// Block = tw x th threads (tw = 1 << twl); blockIdx.x = (plane, tile row, tile col).
__global__ void __launch_bounds__(THREADS)
    pool_staged(const float* __restrict__ x, float* __restrict__ y, int H, int W, int OH, int OW,
                int twl, int tiles_h, int tiles_w, int in_rows, int in_cols) {
  extern __shared__ float tile[];  // [in_rows][in_cols]
  const int tw = 1 << twl, th = THREADS >> twl;
  const int tx = threadIdx.x & (tw - 1), ty = threadIdx.x >> twl;
  long long b = blockIdx.x;
  const int tc = (int)(b % tiles_w);
  b /= tiles_w;
  const int tr = (int)(b % tiles_h);
  const long long plane = b / tiles_h;
  const int oh0 = tr * th, ow0 = tc * tw * V;
  const int h0 = oh0 * SH - PH, w0 = ow0 * SW - PW;
  const float* xp = x + plane * (long long)H * W;
  // The footprint, flattened: thread t loads elements t, t + THREADS, ...;
  // LOADS of them are loaded into registers before any is stored, so each
  // thread keeps LOADS reads in flight (one at a time left an avg pool at
  // 40% of its floor on the H200). (r, c) advance without a division.
  const int n = in_rows * in_cols;
  const int dr = THREADS / in_cols, dc = THREADS - dr * in_cols;
  int r = threadIdx.x / in_cols, c = threadIdx.x - r * in_cols;
  for (int k = threadIdx.x; k < n; k += THREADS * LOADS) {
    float v[LOADS];
#pragma unroll
    for (int u = 0; u < LOADS; ++u) {
      const int h = h0 + r, w = w0 + c;
      v[u] = (k + u * THREADS < n && h >= 0 && h < H && w >= 0 && w < W)
                 ? __ldg(xp + (long long)h * W + w)
                 : PADV;
      r += dr;
      c += dc;
      if (c >= in_cols) {
        c -= in_cols;
        ++r;
      }
    }
#pragma unroll
    for (int u = 0; u < LOADS; ++u)
      if (k + u * THREADS < n) tile[k + u * THREADS] = v[u];
  }
  __syncthreads();
  const int oh = oh0 + ty;
  if (oh >= OH) return;
  float* yr = y + (plane * OH + oh) * (long long)OW;
  const float* trow = tile + ty * SH * in_cols;
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const int j = tx + v * tw;  // output column within the tile
    const int ow = ow0 + j;
    if (ow >= OW) break;
    const float* t = trow + j * SW;
    float acc = PADV;
#pragma unroll UNROLL_KH
    for (int kh = 0; kh < KH; ++kh) {
#pragma unroll UNROLL_KW
      for (int kw = 0; kw < KW; ++kw) {
        const float val = t[kh * in_cols + kw];
        if (IS_MAX)
          max_step(acc, val);
        else
          acc += val;
      }
    }
    if (!IS_MAX) {
      const int hs = oh * SH - PH, ws = ow * SW - PW;
      acc = avg_empty(hs, ws, H, W) ? 0.f : acc / avg_divisor(hs, ws, H, W);
    }
    yr[ow] = acc;
  }
}

// Grid-stride over (plane, oh, group of V consecutive ow).
__global__ void __launch_bounds__(THREADS)
    pool_direct(const float* __restrict__ x, float* __restrict__ y, long long planes, int H, int W,
                int OH, int OW) {
  const int groups = (OW + V - 1) / V;
  const long long total = planes * OH * groups;
  const long long step = (long long)gridDim.x * THREADS;
  for (long long idx = (long long)blockIdx.x * THREADS + threadIdx.x; idx < total; idx += step) {
    const int g = (int)(idx % groups);
    const long long t = idx / groups;
    const int oh = (int)(t % OH);
    const long long plane = t / OH;
    const float* xp = x + plane * (long long)H * W;
    float* yr = y + (plane * OH + oh) * (long long)OW;
    const int hs = oh * SH - PH;
    const int hlo = hs > 0 ? hs : 0, hhi = hs + KH < H ? hs + KH : H;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int ow = g * V + v;
      if (ow >= OW) break;
      const int ws = ow * SW - PW;
      const int wlo = ws > 0 ? ws : 0, whi = ws + KW < W ? ws + KW : W;
      float acc = PADV;
      for (int h = hlo; h < hhi; ++h) {
        const float* xr = xp + (long long)h * W;
        for (int w = wlo; w < whi; ++w) {
          const float val = __ldg(xr + w);
          if (IS_MAX)
            max_step(acc, val);
          else
            acc += val;
        }
      }
      if (!IS_MAX) acc = avg_empty(hs, ws, H, W) ? 0.f : acc / avg_divisor(hs, ws, H, W);
      yr[ow] = acc;
    }
  }
}

// The register kernel's shape: SPAN own columns per input row, LH columns of
// overlap on the left, RH on the right, RIN input rows.
constexpr int SPAN = V * SW;
constexpr int LH = PW;
constexpr int RH = KW - SW - PW > 0 ? KW - SW - PW : 0;
constexpr int RIN_ROWS = ROWS > 0 ? ROWS : 1;  // output rows per thread (1 when unused)
constexpr int RIN = (RIN_ROWS - 1) * SH + KH;
constexpr int EXT = LH + SPAN + RH;
// The overlap comes from the adjacent lane when it lies in that lane's own columns.
constexpr bool HALO_SHFL = LH <= SPAN && RH <= SPAN;
// The thread's input rows fit in registers (big windows, e.g. a 7x7 pool at
// stride 7 with ROWS 2, take the staged or direct kernel instead).
constexpr bool REG_FIT = RIN * EXT <= 128;

// One thread per (plane, group of ROWS output rows, group g of V output
// columns), g fastest: lane l - 1 holds group g - 1 of the same rows when
// g > 0, lane l + 1 group g + 1 when g < groups - 1.
__global__ void __launch_bounds__(THREADS)
    pool_regs(const float* __restrict__ x, float* __restrict__ y, int H, int W, int OH, int OW,
              int groups, int row_groups, long long total, int vec_in, int vec_out) {
  if (!REG_FIT) return;  // never launched then; keeps the dead body from spilling
  const long long idx = (long long)blockIdx.x * THREADS + threadIdx.x;
  const bool live = idx < total;  // the others only take part in the shuffles
  int g, rg;
  long long plane;
  if (total <= 0xffffffffLL) {  // 32-bit divisions (64-bit ones are subroutine calls)
    const unsigned u = (unsigned)idx, t = u / (unsigned)groups;
    g = (int)(u - t * (unsigned)groups);
    rg = (int)(t % (unsigned)row_groups);
    plane = t / (unsigned)row_groups;
  } else {
    const long long t = idx / groups;
    g = (int)(idx - t * groups);
    rg = (int)(t % row_groups);
    plane = t / row_groups;
  }
  const int lane = threadIdx.x & 31;
  const int ow0 = g * V, oh0 = rg * RIN_ROWS;
  const int c0 = ow0 * SW;       // first own input column
  const int r0 = oh0 * SH - PH;  // first input row
  const float* xp = x + plane * (long long)H * W;
  float own[RIN][SPAN];
  // Every load issued before any is used.
  if (SPAN % 4 == 0 && vec_in && c0 + SPAN <= W) {
#pragma unroll
    for (int i = 0; i < RIN; ++i) {
      const int h = r0 + i;
      const bool in = live && h >= 0 && h < H;
      const float4* p = reinterpret_cast<const float4*>(xp + (long long)h * W + c0);
#pragma unroll
      for (int q = 0; q < SPAN / 4; ++q) {
        const float4 v = in ? __ldg(p + q) : make_float4(PADV, PADV, PADV, PADV);
        own[i][4 * q] = v.x;
        own[i][4 * q + 1] = v.y;
        own[i][4 * q + 2] = v.z;
        own[i][4 * q + 3] = v.w;
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < RIN; ++i) {
      const int h = r0 + i;
      const bool in = live && h >= 0 && h < H;
      const float* p = xp + (long long)h * W + c0;
#pragma unroll
      for (int q = 0; q < SPAN; ++q) own[i][q] = in && c0 + q < W ? __ldg(p + q) : PADV;
    }
  }
  // The overlap a lane cannot take from its neighbour (the first and last
  // lane of a warp, the first and last group of a row), loaded with the rest.
  const bool left_lane = HALO_SHFL && lane > 0 && g > 0;
  const bool right_lane = HALO_SHFL && lane < 31 && g < groups - 1;
  float halo[RIN][LH + RH > 0 ? LH + RH : 1];
#pragma unroll
  for (int i = 0; i < RIN; ++i) {
    const int h = r0 + i;
    const bool in = live && h >= 0 && h < H;
    const float* xr = xp + (long long)h * W;
#pragma unroll
    for (int k = 0; k < LH; ++k) {
      const int c = c0 - LH + k;
      halo[i][k] = !left_lane && in && c >= 0 && c < W ? __ldg(xr + c) : PADV;
    }
#pragma unroll
    for (int k = 0; k < RH; ++k) {
      const int c = c0 + SPAN + k;
      halo[i][LH + k] = !right_lane && in && c < W ? __ldg(xr + c) : PADV;
    }
  }
  float acc[RIN_ROWS][V];
#pragma unroll
  for (int r = 0; r < RIN_ROWS; ++r)
#pragma unroll
    for (int v = 0; v < V; ++v) acc[r][v] = PADV;
#pragma unroll
  for (int i = 0; i < RIN; ++i) {
    // This input row from column c0 - LH: the left overlap, the own
    // columns, the right overlap.
    float e[EXT];
#pragma unroll
    for (int k = 0; k < LH; ++k) {
      const float from = HALO_SHFL ? __shfl_up_sync(0xffffffffu, own[i][SPAN - LH + k], 1) : PADV;
      e[k] = left_lane ? from : halo[i][k];
    }
#pragma unroll
    for (int q = 0; q < SPAN; ++q) e[LH + q] = own[i][q];
#pragma unroll
    for (int k = 0; k < RH; ++k) {
      const float from = HALO_SHFL ? __shfl_down_sync(0xffffffffu, own[i][k], 1) : PADV;
      e[LH + SPAN + k] = right_lane ? from : halo[i][LH + k];
    }
    // Add the row to every output row whose window holds it.
#pragma unroll
    for (int r = 0; r < RIN_ROWS; ++r) {
      const int kh = i - r * SH;
      if (kh < 0 || kh >= KH) continue;
#pragma unroll
      for (int v = 0; v < V; ++v)
#pragma unroll
        for (int kw = 0; kw < KW; ++kw) {
          if (IS_MAX)
            max_step(acc[r][v], e[v * SW + kw]);
          else
            acc[r][v] += e[v * SW + kw];
        }
    }
  }
  if (!live) return;
#pragma unroll
  for (int r = 0; r < RIN_ROWS; ++r) {
    const int oh = oh0 + r;
    if (oh >= OH) break;
    float* yr = y + (plane * OH + oh) * (long long)OW + ow0;
    float o[V];
#pragma unroll
    for (int v = 0; v < V; ++v) {
      o[v] = acc[r][v];
      if (!IS_MAX) {
        const int hs = oh * SH - PH, ws = (ow0 + v) * SW - PW;
        o[v] = avg_empty(hs, ws, H, W) ? 0.f : o[v] / avg_divisor(hs, ws, H, W);
      }
    }
    if (V % 4 == 0 && vec_out && ow0 + V <= OW) {
#pragma unroll
      for (int q = 0; q < V / 4; ++q)
        reinterpret_cast<float4*>(yr)[q] =
            make_float4(o[4 * q], o[4 * q + 1], o[4 * q + 2], o[4 * q + 3]);
    } else if (V == 2 && vec_out && ow0 + V <= OW) {
      *reinterpret_cast<float2*>(yr) = make_float2(o[0], o[V > 1 ? 1 : 0]);
    } else {
#pragma unroll
      for (int v = 0; v < V; ++v)
        if (ow0 + v < OW) yr[v] = o[v];
    }
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
  if (n_in < 1 || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if ((X.ndim != 4 && X.ndim != 3) || Y.ndim != X.ndim) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const int nd = X.ndim;
  const long long H = X.shape[nd - 2], W = X.shape[nd - 1];
  long long planes = 1;
  for (int d = 0; d < nd - 2; ++d) {
    if (Y.shape[d] != X.shape[d]) return 4;
    planes *= X.shape[d];
  }
  const long long OH = pooled_size(H, KH, SH, PH), OW = pooled_size(W, KW, SW, PW);
  if (Y.shape[nd - 2] != OH || Y.shape[nd - 1] != OW) return 4;
  if (OH <= 0 || OW <= 0) return 4;
  if (H > 0x7fffffffLL / 4 || W > 0x7fffffffLL / 4 || OH > 0x7fffffffLL / 4 ||
      OW > 0x7fffffffLL / 4)
    return 5;
  if (planes == 0) return 0;
  if (H == 0 || W == 0) return 4;

  const float* xs = static_cast<const float*>(X.data);
  float* ys = static_cast<float*>(Y.data);
  cudaStream_t st = (cudaStream_t)stream;

  if (ROWS > 0 && REG_FIT) {
    const long long groups = (OW + V - 1) / V, row_groups = (OH + RIN_ROWS - 1) / RIN_ROWS;
    const long long total = planes * row_groups * groups;
    const long long grid = (total + THREADS - 1) / THREADS;
    if (grid > 0x7fffffffLL) return 5;
    // float4 loads need 16-byte rows; vector stores rows of whole groups.
    const int vec_in = W % 4 == 0 && reinterpret_cast<uintptr_t>(xs) % 16 == 0;
    const int vec_out = OW % V == 0 && reinterpret_cast<uintptr_t>(ys) % (V >= 4 ? 16 : 4 * V) == 0;
    pool_regs<<<(unsigned)grid, THREADS, 0, st>>>(xs, ys, (int)H, (int)W, (int)OH, (int)OW,
                                                  (int)groups, (int)row_groups, total, vec_in,
                                                  vec_out);
    return (int)cudaGetLastError();
  }
  // staged tile: tw threads along W (power of two <= 32, covering OW / V), th rows
  const long long cols = (OW + V - 1) / V;
  int twl = 0;
  while ((1 << twl) < 32 && (1LL << twl) < cols) ++twl;
  const int tw = 1 << twl, th = THREADS >> twl;
  const long long tiles_w = (OW + (long long)tw * V - 1) / ((long long)tw * V);
  const long long tiles_h = (OH + th - 1) / th;
  const long long in_rows = (long long)(th - 1) * SH + KH;
  const long long in_cols = ((long long)tw * V - 1) * SW + KW;
  const long long smem = in_rows * in_cols * 4;
  const long long blocks = planes * tiles_h * tiles_w;
  // share of the tile's threads with an output to compute
  const double used = (double)(OH * cols) / ((double)tiles_h * th * tiles_w * tw);
  if (smem <= SMEM_KB * 1024LL && used >= 0.5 && blocks <= 0x7fffffffLL) {
    pool_staged<<<(unsigned)blocks, THREADS, (size_t)smem, st>>>(
        xs, ys, (int)H, (int)W, (int)OH, (int)OW, twl, (int)tiles_h, (int)tiles_w, (int)in_rows,
        (int)in_cols);
    return (int)cudaGetLastError();
  }
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const long long total = planes * OH * ((OW + V - 1) / V);
  long long grid = (total + THREADS - 1) / THREADS;
  if (grid > (long long)sms * BLOCKS_PER_SM) grid = (long long)sms * BLOCKS_PER_SM;
  pool_direct<<<(unsigned)grid, THREADS, 0, st>>>(xs, ys, planes, (int)H, (int)W, (int)OH, (int)OW);
  return (int)cudaGetLastError();
}
