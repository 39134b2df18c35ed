// Template: cumsum along the LAST dim of a contiguous fp32 tensor viewed as
// [rows, n] (every leading dim folds into rows). Slots (set by a planner):
// KOPT_REVERSE (flip, cumsum, flip) and KOPT_EXCLUSIVE (y[i] = sum of the
// elements strictly before i in scan order). See README.md next to this file.
//
// Building block: a warp scans a segment of 128*U elements held in registers
// (a float4 per lane per chunk: lane-local scan of 4, 5-step shuffle scan of
// the lane totals, chunk totals chained in order). Three drivers, chosen at
// runtime from rows and n:
//   warp-rows  one warp walks a whole row, segment after segment, carrying
//              the running sum (short rows, or rows enough to fill the GPU
//              with warps);
//   block-rows one block walks a row tile after tile (a tile is one segment
//              per warp), warp totals combined through shared memory, a
//              serial carry between tiles (rows enough to fill it with blocks);
//   look-back  few long rows: every tile of every row is its own block, in
//              the order of an atomic ticket; a tile publishes its aggregate,
//              then sums its predecessors' published aggregates/inclusive
//              prefixes with a warp-wide decoupled look-back (single pass:
//              one read and one write of the data).
// Loads are float4 when both pointers are 16-byte aligned and n % 4 == 0,
// else 4 scalar loads per lane (same sectors, through L1). Within a segment
// the sums are fp32; carries between segments, warps and tiles are fp64 and
// each output is rounded from a (hi, lo) float pair of the carry, so long
// rows stay close to the exact prefix sum.
#include <kopt/abi.h>
#include <kopt/scratch.h>
#include <cuda_runtime.h>
#include <stdint.h>

#define KOPT_REVERSE 0  // slot: 1 scans from the last element to the first (flip, cumsum, flip); 0 forward. Values 0, 1
#define KOPT_EXCLUSIVE 0  // slot: 1 exclusive scan (first output in scan order is 0, y[i] sums the elements before i); 0 inclusive. Values 0, 1

// kopt:knob THREADS 256 64..1024*2 threads per block of the block-rows and look-back kernels (warps per tile; rows per block for warp-rows): larger tiles or more blocks
constexpr int THREADS = 256;
// kopt:knob U 4 {1,2,4,8} float4 chunks each lane holds per segment: more 16-byte loads in flight and longer tiles, more registers
constexpr int U = 4;
// kopt:knob BLOCK_ROWS_PER_SM 4 {1,2,4,8,16} rows per SM from which the block-rows kernel (serial carry) is used instead of look-back
constexpr int BLOCK_ROWS_PER_SM = 4;
// kopt:knob WARP_ROWS_PER_SM 32 {8,16,32,64,128} rows per SM from which one warp per row is used instead of one block per row
constexpr int WARP_ROWS_PER_SM = 32;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

constexpr bool REV = KOPT_REVERSE != 0;
constexpr bool EXCL = KOPT_EXCLUSIVE != 0;
static_assert(KOPT_REVERSE == 0 || KOPT_REVERSE == 1, "KOPT_REVERSE is 0 or 1");
static_assert(KOPT_EXCLUSIVE == 0 || KOPT_EXCLUSIVE == 1, "KOPT_EXCLUSIVE is 0 or 1");
constexpr int WARPS = THREADS / 32;
constexpr int WSEG = 128 * U;        // elements of one warp segment
constexpr int TILE = WARPS * WSEG;  // elements of one block tile
constexpr unsigned FULL = 0xffffffffu;
// warp-rows: cap registers at 64 (U <= 4) or 128 (U = 8) per thread
constexpr int MIN_BLOCKS_RAW = 65536 / (THREADS * (U <= 4 ? 64 : 128));
constexpr int MIN_BLOCKS = MIN_BLOCKS_RAW > 0 ? MIN_BLOCKS_RAW : 1;

// Inclusive scan over the lanes: towards higher lanes (DOWN = false) or
// towards lower lanes (DOWN = true, lane 31 first).
template <bool DOWN>
__device__ __forceinline__ float warp_incl(float v, int lane) {
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    if (DOWN) {
      const float t = __shfl_down_sync(FULL, v, o);
      if (lane + o < 32) v += t;
    } else {
      const float t = __shfl_up_sync(FULL, v, o);
      if (lane >= o) v += t;
    }
  }
  return v;
}

// Four elements at p[i..i+3] (i % 4 == 0); elements at or past n read as 0.
template <bool VEC>
__device__ __forceinline__ float4 load4(const float* __restrict__ p, int64_t i, int64_t n) {
  if (VEC) {  // n % 4 == 0: the four are all in or all out
    return i < n ? __ldcs(reinterpret_cast<const float4*>(p + i)) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  float4 v;
  v.x = i < n ? __ldcs(p + i) : 0.f;
  v.y = i + 1 < n ? __ldcs(p + i + 1) : 0.f;
  v.z = i + 2 < n ? __ldcs(p + i + 2) : 0.f;
  v.w = i + 3 < n ? __ldcs(p + i + 3) : 0.f;
  return v;
}

// Scans the warp segment starting at element `seg` of a row in registers.
// On return o[u] holds, for the lane's 4 elements of chunk u, the sum in scan
// order of the segment's elements up to (inclusive) or before (exclusive)
// each; returns the segment total.
template <bool VEC>
__device__ __forceinline__ float warp_segment(const float* __restrict__ xr, int64_t n, int64_t seg,
                                              int lane, float4 (&o)[U]) {
  float4 v[U];
#pragma unroll
  for (int u = 0; u < U; ++u) v[u] = load4<VEC>(xr, seg + u * 128 + lane * 4, n);
  float tot[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const float4 a = v[u];
    float4 s;  // local scan of the lane's 4 elements, in scan order
    float lt;  // the lane's total
    if (!REV) {
      s.x = a.x; s.y = s.x + a.y; s.z = s.y + a.z; s.w = s.z + a.w;
      lt = s.w;
      if (EXCL) s = make_float4(0.f, s.x, s.y, s.z);
    } else {
      s.w = a.w; s.z = a.z + s.w; s.y = a.y + s.z; s.x = a.x + s.y;
      lt = s.x;
      if (EXCL) s = make_float4(s.y, s.z, s.w, 0.f);
    }
    const float inc = warp_incl<REV>(lt, lane);
    float ex = REV ? __shfl_down_sync(FULL, inc, 1) : __shfl_up_sync(FULL, inc, 1);
    if (lane == (REV ? 31 : 0)) ex = 0.f;
    tot[u] = __shfl_sync(FULL, inc, REV ? 0 : 31);
    o[u] = make_float4(s.x + ex, s.y + ex, s.z + ex, s.w + ex);
  }
  float run = 0.f;  // chunks chained in scan order
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const int u = REV ? U - 1 - k : k;
    o[u].x += run; o[u].y += run; o[u].z += run; o[u].w += run;
    run += tot[u];
  }
  return run;
}

// y = base + o, element-wise, with base in fp64 split into a float pair.
template <bool VEC>
__device__ __forceinline__ void store_segment(float* __restrict__ yr, int64_t n, int64_t seg,
                                              int lane, const float4 (&o)[U], double base) {
  const float hi = (float)base;
  const float lo = (float)(base - (double)hi);
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t i = seg + u * 128 + lane * 4;
    const float4 r = make_float4(hi + (o[u].x + lo), hi + (o[u].y + lo), hi + (o[u].z + lo),
                                 hi + (o[u].w + lo));
    if (VEC) {
      if (i < n) __stcs(reinterpret_cast<float4*>(yr + i), r);
    } else {
      if (i < n) __stcs(yr + i, r.x);
      if (i + 1 < n) __stcs(yr + i + 1, r.y);
      if (i + 2 < n) __stcs(yr + i + 2, r.z);
      if (i + 3 < n) __stcs(yr + i + 3, r.w);
    }
  }
}

// One warp per row; THREADS / 32 rows per block.
template <bool VEC>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    scan_warp_rows(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t row = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
  if (row >= rows) return;  // the whole warp leaves together
  const float* xr = x + row * n;
  float* yr = y + row * n;
  const int64_t segs = (n + WSEG - 1) / WSEG;
  double carry = 0.0;
  for (int64_t c = 0; c < segs; ++c) {
    const int64_t seg = (REV ? segs - 1 - c : c) * WSEG;
    float4 o[U];
    const float t = warp_segment<VEC>(xr, n, seg, lane, o);
    store_segment<VEC>(yr, n, seg, lane, o, carry);
    carry += (double)t;
  }
}

// Scan of the per-warp totals of a tile, in scan order, by one warp: returns
// the exclusive prefix for warp `w`'s segment in lane order; `*agg` = tile total.
__device__ __forceinline__ float tile_warp_prefix(const float* wtot, int lane, int w, float* agg) {
  // Lane l holds the l-th warp total in scan order.
  const float v = lane < WARPS ? wtot[REV ? WARPS - 1 - lane : lane] : 0.f;
  const float inc = warp_incl<false>(v, lane);
  *agg = __shfl_sync(FULL, inc, 31);
  const int pos = REV ? WARPS - 1 - w : w;  // position of warp w in scan order
  const float before = __shfl_sync(FULL, inc, pos > 0 ? pos - 1 : 0);
  return pos > 0 ? before : 0.f;
}

// One block per row (grid-stride over rows), tile after tile with a serial carry.
template <bool VEC>
__global__ void __launch_bounds__(THREADS)
    scan_block_rows(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t n) {
  __shared__ float wtot[2][WARPS];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t tiles = (n + TILE - 1) / TILE;
  int p = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * n;
    float* yr = y + row * n;
    double carry = 0.0;
    for (int64_t c = 0; c < tiles; ++c) {
      const int64_t seg = (REV ? tiles - 1 - c : c) * TILE + (int64_t)warp * WSEG;
      float4 o[U];
      const float t = warp_segment<VEC>(xr, n, seg, lane, o);
      if (lane == 0) wtot[p][warp] = t;
      __syncthreads();  // (parity buffers: the next write to wtot[p] is two barriers away)
      float agg;
      const float wp = tile_warp_prefix(wtot[p], lane, warp, &agg);
      store_segment<VEC>(yr, n, seg, lane, o, carry + (double)wp);
      carry += (double)agg;
      p ^= 1;
    }
  }
}

// Look-back state of one call: a ticket counter and, per tile, a status flag
// (0 none yet, 1 aggregate published, 2 inclusive prefix published) with the
// two values. Counter and flags are zeroed before each launch.
struct LookbackState {
  unsigned long long* counter;
  int* flag;
  double* agg;
  double* inc;
};

#ifndef KOPT_HOST_EMULATION
__device__ __forceinline__ int ld_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
#else  // verified on the CPU (include/kopt/host_cuda.h)
inline int ld_acquire(const int* p) {
  return std::atomic_ref<int>(*const_cast<int*>(p)).load(std::memory_order_acquire);
}
inline void st_release(int* p, int v) { std::atomic_ref<int>(*p).store(v, std::memory_order_release); }
#endif

// One tile per block; tile order (row-major, scan order within a row) is the
// order of the ticket, so a tile only waits for tiles that already run.
template <bool VEC>
__global__ void __launch_bounds__(THREADS)
    scan_lookback(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                  int64_t tiles_per_row, LookbackState st) {
  __shared__ float wtot[WARPS];
  __shared__ float wpre[WARPS];
  __shared__ unsigned long long s_ticket;
  __shared__ double s_prefix;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) s_ticket = atomicAdd(st.counter, 1ull);
  __syncthreads();
  const int64_t t = (int64_t)s_ticket;
  const int64_t row = t / tiles_per_row, c = t % tiles_per_row;
  const float* xr = x + row * n;
  float* yr = y + row * n;
  const int64_t seg = (REV ? tiles_per_row - 1 - c : c) * TILE + (int64_t)warp * WSEG;
  float4 o[U];
  const float wsum = warp_segment<VEC>(xr, n, seg, lane, o);
  if (lane == 0) wtot[warp] = wsum;
  __syncthreads();
  if (warp == 0) {
    // Lane l holds the l-th warp total in scan order; its exclusive prefix
    // is that warp's offset in the tile.
    const float wv = lane < WARPS ? wtot[REV ? WARPS - 1 - lane : lane] : 0.f;
    const float winc = warp_incl<false>(wv, lane);
    const float agg = __shfl_sync(FULL, winc, 31);
    float wex = __shfl_up_sync(FULL, winc, 1);
    if (lane == 0) wex = 0.f;
    if (lane < WARPS) wpre[REV ? WARPS - 1 - lane : lane] = wex;
    double prefix = 0.0;
    if (c == 0) {
      if (lane == 0) {
        st.inc[t] = (double)agg;
        st_release(st.flag + t, 2);
      }
    } else {
      if (lane == 0) {
        st.agg[t] = (double)agg;
        st_release(st.flag + t, 1);
      }
      const int64_t first = t - c;  // this row's first tile
      for (int64_t j = t - 1;; j -= 32) {
        const int64_t q = j - lane;
        int f = 2;  // before the row's first tile: an inclusive prefix of 0
        if (q >= first) f = ld_acquire(st.flag + q);
        while (__any_sync(FULL, f == 0)) {
          if (f == 0) {
            __nanosleep(20);
            f = ld_acquire(st.flag + q);
          }
        }
        double v = 0.0;
        if (q >= first) v = f == 2 ? __ldcg(st.inc + q) : __ldcg(st.agg + q);
        const unsigned m = __ballot_sync(FULL, f == 2);
        const int stop = m ? __ffs(m) - 1 : 31;  // nearest inclusive prefix, lanes up to it count
        if (lane > stop) v = 0.0;
#pragma unroll
        for (int k = 16; k > 0; k >>= 1) v += __shfl_xor_sync(FULL, v, k);
        prefix += v;
        if (m) break;
      }
      if (lane == 0) {
        st.inc[t] = prefix + (double)agg;
        st_release(st.flag + t, 2);
      }
    }
    if (lane == 0) s_prefix = prefix;
  }
  __syncthreads();
  store_segment<VEC>(yr, n, seg, lane, o, s_prefix + (double)wpre[warp]);
}

template <bool VEC>
static int launch(const float* xs, float* ys, int64_t rows, int64_t n, int sms, cudaStream_t s) {
  const int64_t warp_blocks = (rows * 32 + THREADS - 1) / THREADS;
  if (n <= WSEG || rows >= (int64_t)sms * WARP_ROWS_PER_SM) {
    if (warp_blocks > 0x7fffffffLL) return 5;
    scan_warp_rows<VEC><<<(unsigned)warp_blocks, THREADS, 0, s>>>(xs, ys, rows, n);
    return (int)cudaGetLastError();
  }
  const int64_t tiles_per_row = (n + TILE - 1) / TILE;
  const int64_t total = rows * tiles_per_row;
  if (rows >= (int64_t)sms * BLOCK_ROWS_PER_SM || tiles_per_row == 1 || total > 0x7fffffffLL) {
    const int64_t grid = rows < 0x7fffffffLL ? rows : 0x7fffffffLL;
    scan_block_rows<VEC><<<(unsigned)grid, THREADS, 0, s>>>(xs, ys, rows, n);
    return (int)cudaGetLastError();
  }
  // [counter][flags x total] (zeroed) [agg x total][inc x total]
  const size_t head = (8 + 4 * (size_t)total + 15) & ~(size_t)15;
  char* buf = static_cast<char*>(kopt_scratch(head + 16 * (size_t)total));
  if (!buf) return 6;
  if (cudaMemsetAsync(buf, 0, head, s) != cudaSuccess) return 7;
  LookbackState st;
  st.counter = reinterpret_cast<unsigned long long*>(buf);
  st.flag = reinterpret_cast<int*>(buf + 8);
  st.agg = reinterpret_cast<double*>(buf + head);
  st.inc = st.agg + total;
  scan_lookback<VEC><<<(unsigned)total, THREADS, 0, s>>>(xs, ys, n, tiles_per_row, st);
  return (int)cudaGetLastError();
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in < 1 || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const int64_t total = kopt_numel(X);
  if (kopt_numel(Y) != total) return 4;
  if (total == 0) return 0;
  const int64_t n = X.ndim > 0 ? X.shape[X.ndim - 1] : 1;
  const int64_t rows = total / n;

  const float* xs = static_cast<const float*>(X.data);
  float* ys = static_cast<float*>(Y.data);
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const bool vec =
      n % 4 == 0 && ((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0;
  cudaStream_t s = (cudaStream_t)stream;
  return vec ? launch<true>(xs, ys, rows, n, sms, s) : launch<false>(xs, ys, rows, n, sms, s);
}
