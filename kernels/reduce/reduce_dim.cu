// Template: reduce one dim of a contiguous fp32 tensor viewed as
// [outer, R, inner]; output contiguous [outer, inner]. Slots (set by a
// planner): KOPT_DIM (the reduced dim, negative counts from the end like
// torch) and KOPT_OP (sum, mean, max, min, amax, amin, argmax, argmin). See
// README.md next to this file.
//
// Two strategies, chosen at runtime:
//   rows    (inner == 1) a warp per row for R <= WARP_ROW_MAX, else a block
//           per (row, split); float4 loads after a scalar head that aligns
//           the row's address (any R, any offset), scalar tail.
//   columns (inner > 1) a block of THREADS = tx * ty threads: tx along inner
//           (consecutive addresses; a power of two sized to inner), V = 4
//           consecutive inner elements per thread when inner % 4 == 0 and
//           aligned, ty walking R; partials combined over ty in shared memory.
// When the outputs alone cannot fill the GPU (one wave of blocks), R is split
// across blocks (at most SPLIT pieces, each at least MIN_ITERS loads per
// thread): every piece writes a partial to a scratch buffer and a second
// kernel combines the pieces of each output in a fixed order (deterministic).
// NaN: max/min/amax/amin/argmax/argmin propagate NaN like torch (a NaN wins,
// the first NaN's index); ties give the first index.
#include <kopt/abi.h>
#include <kopt/scratch.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#define KOPT_DIM -1  // slot: the reduced dim, torch-style (negative counts from the end). Values -8..7 valid for the input's rank
#define KOPT_OP 0  // slot: 0 sum, 1 mean, 2 max (values; a 2nd int64 output gets the indices), 3 min (same), 4 amax, 5 amin, 6 argmax (int64), 7 argmin (int64)

// kopt:knob THREADS 256 64..1024*2 threads per block: for rows, rows per block (warp kernel) or threads per row; for columns, tx * ty
constexpr int THREADS = 256;
// kopt:knob UNROLL 4 {1,2,4,8} unroll of the load loops: more loads in flight, more registers
constexpr int UNROLL = 4;
// kopt:knob WARP_ROW_MAX 2048 {256,512,1024,2048,4096,8192,16384} longest row (inner == 1) reduced by one warp; longer rows get a block
constexpr int WARP_ROW_MAX = 2048;
// kopt:knob MAX_TX 32 {4,8,16,32,64,128} most threads along inner in the column kernel: wider coalesced rows or more threads along R
constexpr int MAX_TX = 32;
// kopt:knob SPLIT 64 {1,4,16,64,256} most blocks one output's R is split across (1: never split; more fills the GPU when outputs are few)
constexpr int SPLIT = 64;
// kopt:knob MIN_ITERS 8 {2,4,8,16,32} fewest loop iterations per thread in one split piece: fewer, longer pieces or more parallelism
constexpr int MIN_ITERS = 8;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024 && MAX_TX <= THREADS

constexpr int OP = KOPT_OP;
static_assert(OP >= 0 && OP <= 7, "KOPT_OP is 0..7");
constexpr bool SUMLIKE = OP <= 1;
constexpr bool MAXLIKE = OP == 2 || OP == 4 || OP == 6;
constexpr bool TRACK = OP == 2 || OP == 3 || OP == 6 || OP == 7;  // indices kept
constexpr unsigned FULL = 0xffffffffu;

struct Acc {
  float v;
  long long i;
};

__device__ __forceinline__ Acc acc_init() {
  Acc a;
  a.v = SUMLIKE ? 0.f : (MAXLIKE ? -INFINITY : INFINITY);
  a.i = 0x7fffffffffffffffLL;  // larger than any index: the first element always wins
  return a;
}

// true when value a (index ai) should replace b (bi): NaN first (lowest
// index among NaNs), then the larger (max) / smaller (min), ties to the
// lower index.
__device__ __forceinline__ bool wins(float a, long long ai, float b, long long bi) {
  const bool an = a != a, bn = b != b;
  if (an || bn) return an && (!bn || ai < bi);
  if (MAXLIKE) return a > b || (a == b && ai < bi);
  return a < b || (a == b && ai < bi);
}

// amax/amin without indices: a NaN sticks.
__device__ __forceinline__ bool wins_value(float a, float b) {
  return (MAXLIKE ? a > b : a < b) || a != a;
}

__device__ __forceinline__ void push(Acc& a, float x, long long idx) {
  if (SUMLIKE) {
    a.v += x;
  } else if (TRACK) {
    if (wins(x, idx, a.v, a.i)) {
      a.v = x;
      a.i = idx;
    }
  } else if (wins_value(x, a.v)) {
    a.v = x;
  }
}

__device__ __forceinline__ Acc combine(Acc a, const Acc& b) {
  if (SUMLIKE) {
    a.v += b.v;
  } else if (TRACK) {
    if (wins(b.v, b.i, a.v, a.i)) a = b;
  } else if (wins_value(b.v, a.v)) {
    a.v = b.v;
  }
  return a;
}

__device__ __forceinline__ Acc warp_combine(Acc a) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Acc b;
    b.v = __shfl_xor_sync(FULL, a.v, o);
    b.i = TRACK ? __shfl_xor_sync(FULL, a.i, o) : 0;
    a = combine(a, b);
  }
  return a;
}

struct Out {
  float* v;         // values (ops 0-5), or null
  long long* i;     // indices (ops 6, 7; ops 2, 3 when asked), or null
  float* pv;        // split partials [splits][nout] (values), when splits > 1
  long long* pi;    // split partials (indices)
  long long nout;   // outer * inner
  long long R;
};

// Final value of output o (mean divides by R).
__device__ __forceinline__ void write_final(const Out& out, long long o, const Acc& a) {
  if (out.v) out.v[o] = OP == 1 ? a.v / (float)out.R : a.v;
  if (TRACK && out.i) out.i[o] = a.i;
}

__device__ __forceinline__ void write_result(const Out& out, int splits, int s, long long o,
                                             const Acc& a) {
  if (splits == 1) {
    write_final(out, o, a);
  } else {
    out.pv[(long long)s * out.nout + o] = a.v;
    if (TRACK) out.pi[(long long)s * out.nout + o] = a.i;
  }
}

// inner == 1: G threads (a warp, or the block) per (row, split piece).
template <int G>
__global__ void __launch_bounds__(THREADS)
    reduce_rows(const float* __restrict__ x, Out out, long long rows, long long chunk,
                int splits) {
  __shared__ float sv[THREADS / 32];
  __shared__ long long si[THREADS / 32];
  const int lane = threadIdx.x & 31;
  const long long item =
      G == 32 ? ((long long)blockIdx.x * THREADS + threadIdx.x) >> 5 : (long long)blockIdx.x;
  const int t = G == 32 ? lane : threadIdx.x;
  if (item >= rows * splits) return;  // warp-uniform (G = 32) or block-uniform
  const long long row = item / splits;
  const int s = (int)(item % splits);
  const long long R = out.R;
  const long long r0 = (long long)s * chunk;
  const long long r1 = r0 + chunk < R ? r0 + chunk : R;
  const float* xr = x + row * R;
  Acc a = acc_init();
  if (r0 < r1) {
    // scalar head up to a 16-byte boundary, float4 body, scalar tail
    long long head = (long long)(((16 - (reinterpret_cast<uintptr_t>(xr + r0) & 15)) & 15) >> 2);
    if (head > r1 - r0) head = r1 - r0;
    if (t < head) push(a, __ldg(xr + r0 + t), r0 + t);
    const long long b = r0 + head;
    const long long n4 = (r1 - b) >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(xr + b);
#pragma unroll UNROLL
    for (long long k = t; k < n4; k += G) {
      const float4 v = __ldg(x4 + k);
      const long long j = b + 4 * k;
      push(a, v.x, j);
      push(a, v.y, j + 1);
      push(a, v.z, j + 2);
      push(a, v.w, j + 3);
    }
    const long long tb = b + 4 * n4;
    if (tb + t < r1) push(a, __ldg(xr + tb + t), tb + t);
  }
  a = warp_combine(a);
  if (G > 32) {
    const int warp = threadIdx.x >> 5;
    if (lane == 0) {
      sv[warp] = a.v;
      si[warp] = a.i;
    }
    __syncthreads();
    if (warp != 0) return;
    a.v = lane < THREADS / 32 ? sv[lane] : acc_init().v;
    a.i = lane < THREADS / 32 ? si[lane] : acc_init().i;
    a = warp_combine(a);
  }
  if (t == 0) write_result(out, splits, s, row, a);
}

// inner > 1: block = tx (1 << txl, along inner, V per thread) x ty (along R);
// blockIdx.x = (outer index, inner block), blockIdx.y = split piece.
template <int V>
__global__ void __launch_bounds__(THREADS)
    reduce_cols(const float* __restrict__ x, Out out, long long inner, int txl, long long xblocks,
                long long chunk, int splits) {
  extern __shared__ __align__(16) unsigned char smem[];
  float* sv = reinterpret_cast<float*>(smem);                             // [THREADS/2][V]
  long long* si = reinterpret_cast<long long*>(smem + THREADS / 2 * V * 8);  // [THREADS/2][V]
  const int tx = 1 << txl, ty = THREADS >> txl;
  const int xi = threadIdx.x & (tx - 1), yi = threadIdx.x >> txl;
  const long long bx = blockIdx.x;
  const long long o = bx / xblocks;
  const long long i0 = ((bx % xblocks) * tx + xi) * V;  // first inner index of this thread
  const int s = blockIdx.y;
  const long long R = out.R;
  const long long r0 = (long long)s * chunk;
  const long long r1 = r0 + chunk < R ? r0 + chunk : R;
  const bool active = i0 < inner;  // V = 4 only when inner % 4 == 0: all 4 in range
  Acc a[V];
#pragma unroll
  for (int v = 0; v < V; ++v) a[v] = acc_init();
  if (active) {
    const float* base = x + o * R * inner + i0;
#pragma unroll UNROLL
    for (long long r = r0 + yi; r < r1; r += ty) {
      if (V == 4) {
        const float4 q = __ldg(reinterpret_cast<const float4*>(base + r * inner));
        push(a[0], q.x, r);
        push(a[V > 1 ? 1 : 0], q.y, r);
        push(a[V > 2 ? 2 : 0], q.z, r);
        push(a[V > 3 ? 3 : 0], q.w, r);
      } else {
        push(a[0], __ldg(base + r * inner), r);
      }
    }
  }
  // tree over ty: the upper half hands its partials to the lower half
  for (int h = ty >> 1; h >= 1; h >>= 1) {
    if (yi >= h && yi < 2 * h) {
      const int slot = ((yi - h) << txl) + xi;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        sv[slot * V + v] = a[v].v;
        if (TRACK) si[slot * V + v] = a[v].i;
      }
    }
    __syncthreads();
    if (yi < h) {
      const int slot = (yi << txl) + xi;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        Acc b;
        b.v = sv[slot * V + v];
        b.i = TRACK ? si[slot * V + v] : 0;
        a[v] = combine(a[v], b);
      }
    }
    __syncthreads();
  }
  if (yi == 0 && active) {
#pragma unroll
    for (int v = 0; v < V; ++v) write_result(out, splits, s, o * inner + i0 + v, a[v]);
  }
}

// Combines the split pieces of each output, piece 0 first.
__global__ void __launch_bounds__(256) reduce_finalize(Out out, int splits) {
  const long long o = (long long)blockIdx.x * 256 + threadIdx.x;
  if (o >= out.nout) return;
  Acc a = acc_init();
  for (int s = 0; s < splits; ++s) {
    Acc b;
    b.v = out.pv[(long long)s * out.nout + o];
    b.i = TRACK ? out.pi[(long long)s * out.nout + o] : 0;
    a = combine(a, b);
  }
  write_final(out, o, a);
}

static long long cdiv(long long a, long long b) { return (a + b - 1) / b; }

// Pieces R is split into so that `items` work items make about one wave
// (`target` blocks' worth), each piece at least `min_len` long.
static int choose_splits(long long items, long long target, long long R, long long min_len) {
  long long s = items >= target ? 1 : cdiv(target, items);
  const long long by_len = R / (min_len > 0 ? min_len : 1);
  if (s > by_len) s = by_len;
  if (s > SPLIT) s = SPLIT;
  if (s > 65535) s = 65535;
  return s < 1 ? 1 : (int)s;
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in < 1 || n_out < 1) return 1;
  const kopt_tensor& X = in[0];
  if (X.dtype != KOPT_FLOAT32 || !kopt_is_contiguous(X)) return 2;
  // shape -> outer, R, inner
  const int nd = X.ndim;
  int dim = KOPT_DIM;
  if (nd == 0) {
    if (dim != 0 && dim != -1) return 3;
  } else {
    if (dim < 0) dim += nd;
    if (dim < 0 || dim >= nd) return 3;
  }
  long long outer = 1, R = 1, inner = 1;
  for (int d = 0; d < nd; ++d) {
    if (d < dim) outer *= X.shape[d];
    else if (d == dim) R = X.shape[d];
    else inner *= X.shape[d];
  }
  const long long nout = outer * inner;
  // outputs
  Out o{};
  o.nout = nout;
  o.R = R;
  const bool want_values = OP <= 5;
  const int expect_out = (OP == 2 || OP == 3) ? (n_out >= 2 ? 2 : 1) : 1;
  if (n_out != expect_out) return 1;
  for (int k = 0; k < n_out; ++k) {
    const kopt_tensor& Y = out[k];
    const bool is_index = !(want_values && k == 0);
    if (Y.dtype != (is_index ? KOPT_INT64 : KOPT_FLOAT32)) return 2;
    if (!kopt_is_contiguous(Y) || kopt_numel(Y) != nout) return 4;
    if (is_index) o.i = static_cast<long long*>(Y.data);
    else o.v = static_cast<float*>(Y.data);
  }
  if (nout == 0) return 0;
  if (R == 0 && !SUMLIKE) return 5;  // torch refuses max/argmax over an empty dim

  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const long long wave = (long long)sms * (2048 / THREADS);  // blocks in one full wave
  const float* xs = static_cast<const float*>(X.data);
  cudaStream_t st = (cudaStream_t)stream;
  int splits = 1;
  long long chunk = R;

  auto alloc_partials = [&]() -> bool {
    const size_t vb = ((size_t)splits * nout * 4 + 15) & ~(size_t)15;
    char* p = static_cast<char*>(kopt_scratch(vb + (TRACK ? (size_t)splits * nout * 8 : 0)));
    if (!p) return false;
    o.pv = reinterpret_cast<float*>(p);
    o.pi = reinterpret_cast<long long*>(p + vb);
    return true;
  };

  if (inner == 1) {
    const long long rows = outer;
    if (R <= WARP_ROW_MAX) {
      const long long blocks = cdiv(rows * 32, THREADS);
      if (blocks > 0x7fffffffLL) return 6;
      reduce_rows<32><<<(unsigned)blocks, THREADS, 0, st>>>(xs, o, rows, chunk, 1);
      return (int)cudaGetLastError();
    }
    splits = choose_splits(rows, wave, R, (long long)THREADS * 4 * MIN_ITERS);
    chunk = cdiv(R, splits);
    splits = (int)cdiv(R, chunk);  // no empty piece
    if (rows * splits > 0x7fffffffLL) return 6;
    if (splits > 1 && !alloc_partials()) return 7;
    reduce_rows<THREADS><<<(unsigned)(rows * splits), THREADS, 0, st>>>(xs, o, rows, chunk,
                                                                         splits);
  } else {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(xs);
    const int V = (inner % 4 == 0 && (addr & 15) == 0) ? 4 : 1;
    const long long cols = cdiv(inner, V);  // threads needed along inner
    int txl = 0;
    while ((1 << txl) < MAX_TX && (1LL << txl) < cols) ++txl;
    const int ty = THREADS >> txl;
    const long long xblocks = cdiv(cols, 1LL << txl);
    const long long items = outer * xblocks;
    splits = choose_splits(items, wave, R, (long long)ty * MIN_ITERS);
    chunk = cdiv(R > 0 ? R : 1, splits);
    splits = R > 0 ? (int)cdiv(R, chunk) : 1;
    if (items > 0x7fffffffLL) return 6;
    if (splits > 1 && !alloc_partials()) return 7;
    const size_t smem = (size_t)(THREADS / 2) * V * (8 + (TRACK ? 8 : 0));
    const dim3 grid((unsigned)items, (unsigned)splits);
    if (V == 4)
      reduce_cols<4><<<grid, THREADS, smem, st>>>(xs, o, inner, txl, xblocks, chunk, splits);
    else
      reduce_cols<1><<<grid, THREADS, smem, st>>>(xs, o, inner, txl, xblocks, chunk, splits);
  }
  if (splits > 1) {
    const long long blocks = cdiv(nout, 256);
    if (blocks > 0x7fffffffLL) return 6;
    reduce_finalize<<<(unsigned)blocks, 256, 0, st>>>(o, splits);
  }
  return (int)cudaGetLastError();
}
