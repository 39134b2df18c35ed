// Template: cumsum or cumprod along a dim that is NOT the last of a
// contiguous fp32 tensor, viewed as [outer, L, inner] (the scanned dim is L;
// the dims before it fold into outer, those after it into inner). Every
// (outer, inner) column is an independent scan with stride inner. Slots (set
// by a planner): KOPT_DIM, KOPT_OP (0 sum, 1 product), KOPT_REVERSE,
// KOPT_EXCLUSIVE. See README.md next to this file.
//
// A thread owns a column slot: 4 adjacent columns as a float4 (inner % 4 ==
// 0 and 16-byte aligned pointers) or one column, so a warp's loads of one
// row are coalesced. It scans a chunk of R rows of its slot in registers.
// Two drivers, chosen at run time from the number of slots:
//   serial     each thread walks its whole column chunk after chunk with a
//              running carry (slots enough to fill the GPU);
//   look-back  few slots, long columns (a [4096, 16384] tensor along dim 0
//              has 4096 float4 slots: 4096 threads would leave an H100 at a
//              few percent of its DRAM rate): every chunk of every slot
//              group is its own block, in the order of an atomic ticket; each
//              thread publishes its chunk's aggregate, then combines its
//              predecessors' published aggregates or inclusive prefixes
//              (decoupled look-back per column slot: single pass, one read
//              and one write of the data).
// Carries between chunks are fp64 for sums (long columns stay close to the
// exact prefix sum) and fp32 for products (as PyTorch's own).
#include <kopt/abi.h>
#include <kopt/scratch.h>
#include <cuda_runtime.h>
#include <stdint.h>

#define KOPT_DIM 0  // slot: the scanned dim (non-negative; not the last dim). Values 0, 1, 2, 3
#define KOPT_OP 0  // slot: 0 cumsum, 1 cumprod. Values 0, 1
#define KOPT_REVERSE 0  // slot: 1 scans from the last row to the first (flip, scan, flip); 0 forward. Values 0, 1
#define KOPT_EXCLUSIVE 0  // slot: 1 exclusive (the first output in scan order is the identity, y[i] combines the rows before i); 0 inclusive. Values 0, 1

// kopt:knob THREADS 128 {64,128,256,512} threads per block, one column slot each
constexpr int THREADS = 128;
// kopt:knob R 16 {4,8,16,32} rows of its slot each thread holds per chunk: more loads in flight and fewer look-back steps, more registers
constexpr int R = 16;
// kopt:knob SERIAL_SLOTS_PER_SM 2048 {512,1024,2048,4096} column slots per SM from which each thread walks its whole column (no look-back)
constexpr int SERIAL_SLOTS_PER_SM = 2048;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

constexpr bool PROD = KOPT_OP == 1;
constexpr bool REV = KOPT_REVERSE != 0;
constexpr bool EXCL = KOPT_EXCLUSIVE != 0;
static_assert(KOPT_OP == 0 || KOPT_OP == 1, "KOPT_OP is 0 (sum) or 1 (product)");
static_assert(KOPT_REVERSE == 0 || KOPT_REVERSE == 1, "KOPT_REVERSE is 0 or 1");
static_assert(KOPT_EXCLUSIVE == 0 || KOPT_EXCLUSIVE == 1, "KOPT_EXCLUSIVE is 0 or 1");
static_assert(KOPT_DIM >= 0, "KOPT_DIM is non-negative");

// The carry's type: fp64 for sums, fp32 for products.
template <bool P> struct CarryOf { typedef double type; };
template <> struct CarryOf<true> { typedef float type; };
typedef CarryOf<PROD>::type carry_t;

__device__ __forceinline__ float op(float a, float b) { return PROD ? a * b : a + b; }
__device__ __forceinline__ carry_t opc(carry_t a, carry_t b) { return PROD ? a * b : a + b; }
constexpr float IDENTITY = PROD ? 1.f : 0.f;

// A slot's W (1 or 4) lanes of one row.
template <int W> struct Lanes { float v[W]; };
template <int W> struct Carry { carry_t v[W]; };

template <int W>
__device__ __forceinline__ Lanes<W> load_row(const float* __restrict__ p) {
  Lanes<W> r;
  if (W == 4) {
    const float4 q = __ldcs(reinterpret_cast<const float4*>(p));
    r.v[0] = q.x;
    r.v[W > 1 ? 1 : 0] = q.y;
    r.v[W > 2 ? 2 : 0] = q.z;
    r.v[W > 3 ? 3 : 0] = q.w;
  } else {
    r.v[0] = __ldcs(p);
  }
  return r;
}

template <int W>
__device__ __forceinline__ void store_row(float* __restrict__ p, const Lanes<W>& r) {
  if (W == 4) {
    __stcs(reinterpret_cast<float4*>(p),
           make_float4(r.v[0], r.v[W > 1 ? 1 : 0], r.v[W > 2 ? 2 : 0], r.v[W > 3 ? 3 : 0]));
  } else {
    __stcs(p, r.v[0]);
  }
}

// Scans chunk `c` of a slot (rows c*R .. c*R+R-1 in scan order, those past
// L left out) in registers: on return v[k] holds the chunk-local inclusive
// (or exclusive) scan in scan order, and the function returns the chunk's
// aggregate.
template <int W>
__device__ __forceinline__ Lanes<W> scan_chunk(const float* __restrict__ col, int64_t L,
                                               int64_t inner, int64_t c, Lanes<W> (&v)[R]) {
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const int64_t pos = c * R + k;
    const int64_t row = REV ? L - 1 - pos : pos;
    if (pos < L) {
      v[k] = load_row<W>(col + row * inner);
    } else {
#pragma unroll
      for (int w = 0; w < W; ++w) v[k].v[w] = IDENTITY;
    }
  }
  Lanes<W> run;
#pragma unroll
  for (int w = 0; w < W; ++w) run.v[w] = IDENTITY;
#pragma unroll
  for (int k = 0; k < R; ++k)
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const float before = run.v[w];
      run.v[w] = op(run.v[w], v[k].v[w]);
      v[k].v[w] = EXCL ? before : run.v[w];
    }
  return run;
}

// y = prefix (op) v for the chunk's rows.
template <int W>
__device__ __forceinline__ void store_chunk(float* __restrict__ col, int64_t L, int64_t inner,
                                            int64_t c, const Lanes<W> (&v)[R],
                                            const Carry<W>& prefix) {
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const int64_t pos = c * R + k;
    if (pos >= L) break;
    const int64_t row = REV ? L - 1 - pos : pos;
    Lanes<W> o;
#pragma unroll
    for (int w = 0; w < W; ++w) o.v[w] = (float)opc(prefix.v[w], (carry_t)v[k].v[w]);
    store_row<W>(col + row * inner, o);
  }
}

// The first element of slot s's column.
__device__ __forceinline__ int64_t column_base(int64_t s, int64_t slots_per_outer, int64_t L,
                                               int64_t inner, int w) {
  const int64_t o = s / slots_per_outer, iv = s % slots_per_outer;
  return o * L * inner + iv * w;
}

// Serial: one thread walks its slot's whole column, chunk after chunk.
template <int W>
__global__ void __launch_bounds__(THREADS)
    scan_serial(const float* __restrict__ x, float* __restrict__ y, int64_t L, int64_t inner,
                int64_t slots_per_outer, int64_t slots) {
  for (int64_t s = (int64_t)blockIdx.x * THREADS + threadIdx.x; s < slots;
       s += (int64_t)gridDim.x * THREADS) {
    const int64_t base = column_base(s, slots_per_outer, L, inner, W);
    Carry<W> carry;
#pragma unroll
    for (int w = 0; w < W; ++w) carry.v[w] = (carry_t)IDENTITY;
    const int64_t chunks = (L + R - 1) / R;
    for (int64_t c = 0; c < chunks; ++c) {
      Lanes<W> v[R];
      const Lanes<W> agg = scan_chunk<W>(x + base, L, inner, c, v);
      store_chunk<W>(y + base, L, inner, c, v, carry);
#pragma unroll
      for (int w = 0; w < W; ++w) carry.v[w] = opc(carry.v[w], (carry_t)agg.v[w]);
    }
  }
}

// Look-back state of one call: a ticket counter and, per (chunk, slot), a
// status flag (0 none yet, 1 aggregate published, 2 inclusive prefix
// published) with W values of each. Counter and flags are zeroed before
// each launch.
struct LookbackState {
  unsigned long long* counter;
  int* flag;
  carry_t* agg;
  carry_t* inc;
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

// One (chunk, group of THREADS slots) per block; the ticket orders the
// chunks in scan order, so a thread only waits on chunks already running.
template <int W>
__global__ void __launch_bounds__(THREADS)
    scan_lookback(const float* __restrict__ x, float* __restrict__ y, int64_t L, int64_t inner,
                  int64_t slots_per_outer, int64_t slots, int64_t groups, LookbackState st) {
  __shared__ unsigned long long s_ticket;
  if (threadIdx.x == 0) s_ticket = atomicAdd(st.counter, 1ull);
  __syncthreads();
  const int64_t t = (int64_t)s_ticket;
  const int64_t c = t / groups;
  const int64_t s = (t % groups) * THREADS + threadIdx.x;
  if (s >= slots) return;
  const int64_t base = column_base(s, slots_per_outer, L, inner, W);
  Lanes<W> v[R];
  const Lanes<W> agg = scan_chunk<W>(x + base, L, inner, c, v);
  const int64_t me = c * slots + s;
  Carry<W> prefix;
#pragma unroll
  for (int w = 0; w < W; ++w) prefix.v[w] = (carry_t)IDENTITY;
  if (c == 0) {
#pragma unroll
    for (int w = 0; w < W; ++w) st.inc[me * W + w] = (carry_t)agg.v[w];
    st_release(st.flag + me, 2);
  } else {
#pragma unroll
    for (int w = 0; w < W; ++w) st.agg[me * W + w] = (carry_t)agg.v[w];
    st_release(st.flag + me, 1);
    for (int64_t j = c - 1; j >= 0; --j) {
      const int64_t q = j * slots + s;
      int f = ld_acquire(st.flag + q);
      while (f == 0) {
        __nanosleep(32);
        f = ld_acquire(st.flag + q);
      }
      const carry_t* src = f == 2 ? st.inc : st.agg;
#pragma unroll
      for (int w = 0; w < W; ++w) prefix.v[w] = opc(__ldcg(src + q * W + w), prefix.v[w]);
      if (f == 2) break;
    }
#pragma unroll
    for (int w = 0; w < W; ++w) st.inc[me * W + w] = opc(prefix.v[w], (carry_t)agg.v[w]);
    st_release(st.flag + me, 2);
  }
  store_chunk<W>(y + base, L, inner, c, v, prefix);
}

template <int W>
static int launch(const float* xs, float* ys, int64_t outer, int64_t L, int64_t inner, int sms,
                  cudaStream_t s) {
  const int64_t slots_per_outer = inner / W;
  const int64_t slots = outer * slots_per_outer;
  const int64_t groups = (slots + THREADS - 1) / THREADS;
  const int64_t chunks = (L + R - 1) / R;
  if (slots >= (int64_t)sms * SERIAL_SLOTS_PER_SM || chunks == 1 || groups * chunks > 0x7fffffffLL) {
    const int64_t grid = groups < (int64_t)sms * 32 ? groups : (int64_t)sms * 32;
    scan_serial<W><<<(unsigned)grid, THREADS, 0, s>>>(xs, ys, L, inner, slots_per_outer, slots);
    return (int)cudaGetLastError();
  }
  // [counter][flags x tiles] (zeroed) [agg x tiles x W][inc x tiles x W]
  const size_t tiles = (size_t)(chunks * slots);
  const size_t head = (8 + 4 * tiles + 15) & ~(size_t)15;
  char* buf = static_cast<char*>(kopt_scratch(head + 2 * sizeof(carry_t) * W * tiles));
  if (!buf) return 6;
  if (cudaMemsetAsync(buf, 0, head, s) != cudaSuccess) return 7;
  LookbackState st;
  st.counter = reinterpret_cast<unsigned long long*>(buf);
  st.flag = reinterpret_cast<int*>(buf + 8);
  st.agg = reinterpret_cast<carry_t*>(buf + head);
  st.inc = st.agg + W * tiles;
  scan_lookback<W><<<(unsigned)(groups * chunks), THREADS, 0, s>>>(xs, ys, L, inner,
                                                                   slots_per_outer, slots, groups,
                                                                   st);
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
  if (KOPT_DIM >= X.ndim - 1) return 5;  // the last dim (or past it): not this template's
  if (total == 0) return 0;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < KOPT_DIM; ++d) outer *= X.shape[d];
  for (int d = KOPT_DIM + 1; d < X.ndim; ++d) inner *= X.shape[d];
  const int64_t L = X.shape[KOPT_DIM];

  const float* xs = static_cast<const float*>(X.data);
  float* ys = static_cast<float*>(Y.data);
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const bool vec = inner % 4 == 0 &&
                   ((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0;
  cudaStream_t s = (cudaStream_t)stream;
  return vec ? launch<4>(xs, ys, outer, L, inner, sms, s) : launch<1>(xs, ys, outer, L, inner, sms, s);
}
