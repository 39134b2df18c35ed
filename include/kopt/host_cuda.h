/* kopt/host_cuda.h — runs a CUDA C++ candidate on the CPU, for verification
 * only (`--arch host`, docs/verification.md): a build for the host compiles
 * the .cu as C++20 with this header forced in, after src/build's rewrite has
 * turned each `kernel<<<grid, block, smem, stream>>>(args)` into a call of
 * kopt_host::launch and each `extern __shared__` array into the launch's
 * dynamic shared memory.
 *
 * What it emulates: every thread of a block is an OS thread (blocks run one
 * after another, in blockIdx order, so a look-back on earlier blocks sees
 * them finished); __syncthreads and the warp intrinsics (shuffles, ballots,
 * __syncwarp) are barriers over the block's or the warp's threads that have
 * not returned; `__shared__` variables are shared by the block; dynamic
 * shared memory starts as 0xFF bytes (NaN as float), so a read before any
 * write shows; atomics are std::atomic_ref; device memory is host memory.
 * Not emulated: inline PTX (`asm`), tensor-core and async-copy intrinsics,
 * half types, cooperative groups, warp intrinsics called by part of a warp
 * (they wait for the lanes that did not call them: a hang, which the
 * verifier's timeout ends). Timing a host build means nothing.
 */
#pragma once
#ifndef __cplusplus
#error "kopt/host_cuda.h is C++ only"
#endif

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#define KOPT_HOST_EMULATION 1

#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __shared__ static

/* ---- vector types ---------------------------------------------------------- */
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(16) double2 {
  double x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
inline dim3 make_dim3(unsigned x, unsigned y, unsigned z) { return dim3(x, y, z); }

inline thread_local uint3 threadIdx{0, 0, 0};
inline thread_local uint3 blockIdx{0, 0, 0};
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
constexpr int warpSize = 32;

/* ---- the runtime API ------------------------------------------------------- */
typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
} cudaError_t;
typedef struct CUstream_st* cudaStream_t;
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxRegistersPerMultiprocessor = 82,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};
enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};
enum {
  cudaSharedmemCarveoutDefault = -1,
  cudaSharedmemCarveoutMaxShared = 100,
  cudaSharedmemCarveoutMaxL1 = 0
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

namespace kopt_host {
inline thread_local cudaError_t last_error = cudaSuccess;
}  // namespace kopt_host

inline cudaError_t cudaGetLastError() {
  cudaError_t e = kopt_host::last_error;
  kopt_host::last_error = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return kopt_host::last_error; }
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
  }
  return "unknown error";
}
inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
/* The H200's figures, so launch-shape logic (waves, split counts) takes the
 * path it takes there. */
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  switch (a) {
    case cudaDevAttrMaxThreadsPerBlock:
      *v = 1024;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *v = 49152;
      break;
    case cudaDevAttrWarpSize:
      *v = 32;
      break;
    case cudaDevAttrMultiProcessorCount:
      *v = 132;
      break;
    case cudaDevAttrL2CacheSize:
      *v = 50331648;
      break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *v = 2048;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *v = 9;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *v = 0;
      break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *v = 233472;
      break;
    case cudaDevAttrMaxRegistersPerMultiprocessor:
      *v = 65536;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *v = 232448;
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) {
  return cudaSuccess;
}
template <class F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, F, int threads, size_t) {
  *n = threads > 0 ? std::max(1, 2048 / threads) : 0;
  return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** p, size_t n) {
  *p = ::aligned_alloc(256, ((n + 255) / 256) * 256 + 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T>
inline cudaError_t cudaMalloc(T** p, size_t n) {
  return cudaMalloc(reinterpret_cast<void**>(p), n);
}
inline cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t) { return cudaMalloc(p, n); }
template <class T>
inline cudaError_t cudaMallocAsync(T** p, size_t n, cudaStream_t s) {
  return cudaMallocAsync(reinterpret_cast<void**>(p), n, s);
}
inline cudaError_t cudaFree(void* p) {
  ::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
inline cudaError_t cudaMemset(void* p, int v, size_t n) {
  ::memset(p, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t = nullptr) {
  return cudaMemset(p, v, n);
}
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) {
  ::memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k,
                                   cudaStream_t = nullptr) {
  return cudaMemcpy(d, s, n, k);
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

/* ---- 16-bit floats (cuda_bf16.h, cuda_fp16.h): storage and conversions ---- */
struct __nv_bfloat16 {
  unsigned short x;
};
struct __half {
  unsigned short x;
};
inline float __bfloat162float(__nv_bfloat16 h) {
  return std::bit_cast<float>(static_cast<unsigned>(h.x) << 16);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  unsigned u = std::bit_cast<unsigned>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<unsigned short>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return {static_cast<unsigned short>(u >> 16)};
}
inline float __half2float(__half h) { return static_cast<float>(std::bit_cast<_Float16>(h.x)); }
inline __half __float2half_rn(float f) {
  return {std::bit_cast<unsigned short>(static_cast<_Float16>(f))};
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
inline unsigned short __half_as_ushort(__half h) { return h.x; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short x) { return {x}; }
inline __half __ushort_as_half(unsigned short x) { return {x}; }

/* ---- math and bit intrinsics ------------------------------------------------ */
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __saturatef(float x) { return x != x ? 0.0f : std::min(1.0f, std::max(0.0f, x)); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float exp10f(float x) { return powf(10.0f, x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return std::countl_zero(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline int __ffsll(long long x) {
  return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1;
}
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
/* CUDA's min/max accept mixed integer types; std's do not. */
template <class A, class B>
inline std::common_type_t<A, B> min(A a, B b) {
  return b < a ? b : a;
}
template <class A, class B>
inline std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}

/* ---- memory access hints: plain accesses here ------------------------------- */
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
template <class T>
inline T __ldcg(const T* p) {
  return *p;
}
template <class T>
inline T __ldca(const T* p) {
  return *p;
}
template <class T>
inline T __ldcs(const T* p) {
  return *p;
}
template <class T>
inline T __ldlu(const T* p) {
  return *p;
}
template <class T>
inline T __ldcv(const T* p) {
  return *p;
}
template <class T>
inline void __stcs(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stcg(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stwb(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stwt(T* p, T v) {
  *p = v;
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __nanosleep(unsigned) { std::this_thread::yield(); }

/* ---- atomics ---------------------------------------------------------------- */
template <class T>
inline T atomicAdd(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_add(v);
}
template <class T>
inline T atomicSub(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_sub(v);
}
template <class T>
inline T atomicExch(T* p, T v) {
  return std::atomic_ref<T>(*p).exchange(v);
}
template <class T>
inline T atomicCAS(T* p, T expected, T desired) {
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
  return expected;
}
template <class T>
inline T atomicMax(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <class T>
inline T atomicMin(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <class T>
inline T atomicOr(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_or(v);
}
template <class T>
inline T atomicAnd(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_and(v);
}

/* ---- blocks, warps and launches --------------------------------------------- */
namespace kopt_host {

/// A barrier whose party count shrinks as threads return from the kernel
/// (CUDA counts an exited thread as arrived).
class Barrier {
 public:
  void Reset(unsigned n) {
    std::lock_guard<std::mutex> l(m_);
    expected_ = n;
    arrived_ = 0;
  }
  void Wait() {
    std::unique_lock<std::mutex> l(m_);
    const unsigned long phase = phase_;
    if (++arrived_ >= expected_) {
      Release();
      return;
    }
    cv_.wait(l, [&] { return phase_ != phase; });
  }
  void Drop() {
    std::lock_guard<std::mutex> l(m_);
    if (expected_ > 0) --expected_;
    if (arrived_ > 0 && arrived_ >= expected_) Release();
  }

 private:
  void Release() {
    arrived_ = 0;
    ++phase_;
    cv_.notify_all();
  }
  std::mutex m_;
  std::condition_variable cv_;
  unsigned expected_ = 0, arrived_ = 0;
  unsigned long phase_ = 0;
};

struct BlockState {
  unsigned threads = 0;
  Barrier block;
  std::deque<Barrier> warps;
  std::vector<unsigned long long> slots;  // one exchange slot per thread
  std::vector<unsigned char> dynamic;     // dynamic shared memory
};
inline thread_local BlockState* state = nullptr;
inline thread_local unsigned tid = 0;

inline void* dynamic_smem() { return state->dynamic.data(); }

inline unsigned WarpLanes(unsigned warp) { return std::min(32u, state->threads - warp * 32u); }

/// Every lane of the calling warp publishes `v`; each gets lane `src`'s
/// (its own when `src` is outside the warp).
template <class T>
inline T Exchange(T v, int src) {
  static_assert(sizeof(T) <= sizeof(unsigned long long), "shuffles move at most 8 bytes");
  BlockState& s = *state;
  const unsigned warp = tid / 32;
  unsigned long long bits = 0;
  memcpy(&bits, &v, sizeof(T));
  s.slots[tid] = bits;
  s.warps[warp].Wait();
  T r = v;
  if (src >= 0 && static_cast<unsigned>(src) < WarpLanes(warp))
    memcpy(&r, &s.slots[warp * 32 + static_cast<unsigned>(src)], sizeof(T));
  s.warps[warp].Wait();
  return r;
}
inline unsigned Lane() { return tid % 32; }

/// Runs `kernel` (a call of the kernel with its arguments) on a grid: one OS
/// thread per CUDA thread, blocks one after another.
template <class F>
inline void launch(F&& kernel, dim3 grid, dim3 block, size_t smem = 0, const void* = nullptr) {
  const unsigned long long nt = 1ull * block.x * block.y * block.z;
  const unsigned long long nb = 1ull * grid.x * grid.y * grid.z;
  if (nt == 0 || nt > 1024 || block.z > 64 || grid.y > 65535 || grid.z > 65535 ||
      grid.x > 0x7fffffffu || nb == 0 || smem > 232448) {
    last_error = cudaErrorInvalidConfiguration;
    return;
  }
  BlockState s;
  s.threads = static_cast<unsigned>(nt);
  s.warps.resize((s.threads + 31) / 32);
  s.slots.assign(s.threads, 0);
  s.dynamic.assign(smem + 16, 0xFF);
  auto reset = [&] {
    s.block.Reset(s.threads);
    for (unsigned w = 0; w < s.warps.size(); ++w)
      s.warps[w].Reset(std::min(32u, s.threads - w * 32u));
  };
  reset();
  Barrier team;
  team.Reset(s.threads);
  std::vector<std::thread> pool;
  pool.reserve(s.threads);
  for (unsigned t = 0; t < s.threads; ++t) {
    pool.emplace_back([&, t] {
      state = &s;
      tid = t;
      threadIdx = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
      blockDim = block;
      gridDim = grid;
      for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
          for (unsigned x = 0; x < grid.x; ++x) {
            blockIdx = {x, y, z};
            kernel();
            s.block.Drop();
            s.warps[t / 32].Drop();
            team.Wait();  // the whole block has returned
            if (t == 0) reset();
            team.Wait();  // the barriers are ready for the next block
          }
      state = nullptr;
    });
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace kopt_host

inline void __syncthreads() { kopt_host::state->block.Wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  kopt_host::state->warps[kopt_host::tid / 32].Wait();
}
inline unsigned __activemask() {
  const unsigned lanes = kopt_host::WarpLanes(kopt_host::tid / 32);
  return lanes >= 32 ? 0xffffffffu : ((1u << lanes) - 1u);
}
template <class T>
inline T __shfl_sync(unsigned, T v, int src, int width = 32) {
  const int lane = static_cast<int>(kopt_host::Lane());
  return kopt_host::Exchange(v, (lane & ~(width - 1)) + (src & (width - 1)));
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  const int lane = static_cast<int>(kopt_host::Lane());
  const int src = lane ^ mask;
  return kopt_host::Exchange(v, (src & ~(width - 1)) == (lane & ~(width - 1)) ? src : lane);
}
template <class T>
inline T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = static_cast<int>(kopt_host::Lane());
  const int src = lane + static_cast<int>(delta);
  return kopt_host::Exchange(v,
                             (lane & (width - 1)) + static_cast<int>(delta) < width ? src : lane);
}
template <class T>
inline T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  const int lane = static_cast<int>(kopt_host::Lane());
  const int src = lane - static_cast<int>(delta);
  return kopt_host::Exchange(v, (lane & (width - 1)) >= static_cast<int>(delta) ? src : lane);
}
inline unsigned __ballot_sync(unsigned, int pred) {
  using namespace kopt_host;
  BlockState& s = *state;
  const unsigned warp = tid / 32, lanes = WarpLanes(warp);
  s.slots[tid] = pred ? 1 : 0;
  s.warps[warp].Wait();
  unsigned r = 0;
  for (unsigned l = 0; l < lanes; ++l)
    if (s.slots[warp * 32 + l]) r |= 1u << l;
  s.warps[warp].Wait();
  return r;
}
inline int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0; }
inline int __all_sync(unsigned m, int pred) { return __ballot_sync(m, pred) == __activemask(); }

/* The marker the worker looks for before it runs a cuda candidate on the CPU. */
extern "C" __attribute__((visibility("default"), used)) int kopt_host_emulation(void) { return 1; }
