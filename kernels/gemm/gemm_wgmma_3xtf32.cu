// Strict-fp32 GEMM on Hopper's warpgroup tensor cores by split precision
// (3xTF32): C = A·B (+bias) (then ReLU / exact GELU, then a constant scale),
// float32 in and out, with an error at the level of an fp32 SIMT GEMM.
// sm_90a only (wgmma, TMA); built for another target it returns 9.
//
// Same split as gemm_3xtf32.cu (README): x = big + small, big = tf32(x),
// small = tf32(x - big), and a·b ≈ a_small·b_big + a_big·b_small + a_big·b_big.
// Here the split is a pass of its own before the GEMM: it writes each operand
// as two K-major planes (big, small) in scratch memory, rows padded to a
// multiple of 4 floats (B given as [K, N] is transposed on the way). The GEMM
// then reads four planes through the tensor-memory accelerator (TMA, 128-byte
// swizzle) and feeds them to wgmma.m64nBNk8.tf32 straight from shared memory.
//
// Accumulation: the tensor core rounds its fp32 sums toward zero. Each stage's
// 4 k-slices × 3 products (32-deep) are summed from zero into a partial
// accumulator, which is then added to the running sum by round-to-nearest
// FADDs (truncation stays relative to a 32-deep partial, random in sign across
// stages: ~7e-7 relative, like fp32 SIMT; the running sum in the tensor core
// would drift by ~3e-5 at K = 4096).
//
// Structure: a block computes a BM×BN tile of C (BM = 64·CONSUMERS) with
// CONSUMERS + 1 warpgroups: warpgroup 0 is the producer (one thread issues
// the TMA copies of a stage once the consumers have freed it), each other
// warpgroup owns 64 rows of the tile (wgmma m64nBNk8, BN/2 accumulator and BN/2
// partial registers per thread). STAGES shared-memory stages of 32-deep
// slices, full/empty mbarriers. Rows and columns past M, N and K read as
// zeros (TMA fills them); stores are guarded. The epilogue adds the bias,
// applies the activation and the scale straight from registers. A GEMM with
// fewer tiles than half the SMs splits K across blocks (SPLIT_K): each
// writes its raw partial tile, and a second pass sums them in split order
// and applies the epilogue.
//
// Inputs: in[0] = A [M,K] (or [..., M, K]: leading dims fold into M when not
// batched), in[1] = B [K,N] (or [N,K] with KOPT_TRANS_B), in[2] = bias [N]
// with KOPT_BIAS; batched: A [b,M,K], B [b,K,N] / [b,N,K], C [b,M,N].
// Contiguous float32 only; anything else returns nonzero.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <kopt/scratch.h>
#include <stdint.h>

// Slot and knob lines stay one line each (kernels/README.md).
// clang-format off
#define KOPT_TRANS_B 0  // slot: B layout: 0 = B is [K,N] (A @ B), 1 = B is [N,K] (A @ B.T, nn.Linear's weight)
#define KOPT_BATCHED 0  // slot: 0 = one GEMM (A may have leading dims folded into M), 1 = batched bmm: A [b,M,K], B [b,K,N] or [b,N,K], C [b,M,N]
#define KOPT_BIAS 0  // slot: 0 = no bias, 1 = in[2] is a bias of shape [N] added to every row (addmm / nn.Linear)
#define KOPT_EPILOGUE 0  // slot: activation after the bias: 0 = none, 1 = ReLU, 2 = GELU (exact, erf), 3 = GELU (tanh approximation)
#define KOPT_OUT_SCALE_X1000 1000  // slot: output multiplied by this / 1000 after the activation (1000 = no scaling)

// kopt:knob BN 128 {64,128} block tile columns (wgmma N): larger reuses A more per load, fewer blocks for small N
constexpr int BN = 128;
// kopt:knob CONSUMERS 2 {1,2} consumer warpgroups, 64 tile rows each: 2 reuses B across 128 rows and lets one warpgroup's MMAs cover the other's partial-sum adds
constexpr int CONSUMERS = 2;
// kopt:knob STAGES 3 {2,3,4,5,6} shared-memory pipeline depth: more copies in flight, more shared memory
constexpr int STAGES = 3;
// kopt:knob GROUP_M 8 {1,8,16} tile rows visited together: L2 reuse of B tiles across neighbouring blocks
constexpr int GROUP_M = 8;
// kopt:knob SPLIT_K 1 {0,1} 1: a GEMM with fewer tiles than half the SMs splits K across blocks (partial tiles summed in a fixed order by a second pass that applies the epilogue); 0: never
constexpr int SPLIT_K = 1;
// kopt:constraint STAGES * (64 * CONSUMERS + BN) * 256 + 1024 + 16 * STAGES <= 232448
// clang-format on

constexpr int BM = 64 * CONSUMERS;
constexpr int BK = 32;  // fp32 elements in one 128-byte swizzled row
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int A_TILE = BM * BK;  // floats in one plane of one stage
constexpr int B_TILE = BN * BK;
constexpr int STAGE_FLOATS = 2 * (A_TILE + B_TILE);  // A big, A small, B big, B small
constexpr uint32_t STAGE_BYTES = STAGE_FLOATS * 4;
constexpr int SMEM_BYTES =
    STAGES * STAGE_BYTES + 1024 + 16 * STAGES;  // + alignment slack + barriers
constexpr int NACC = BN / 2;                    // m64 × BN fp32 accumulators over 128 threads

static_assert(BN == 64 || BN == 128, "BN is 64 or 128");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
static_assert(STAGES >= 2, "pipeline needs two stages");
static_assert(SMEM_BYTES <= 232448, "shared memory per block exceeds 227 KB");
static_assert(KOPT_EPILOGUE >= 0 && KOPT_EPILOGUE <= 3, "KOPT_EPILOGUE is 0, 1, 2 or 3");

// 1 in device code built with sm_90a's features (wgmma, setmaxnreg), else 0:
// the host reads it once and refuses to launch a kernel built without them.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KOPT_WGMMA 1
#else
#define KOPT_WGMMA 0
#endif
__device__ int kopt_wgmma_built = KOPT_WGMMA;

// ---------------------------------------------------------------------------
// The split pass: x -> (big, small) tf32 planes.

__device__ __forceinline__ float tf32_rna(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}
__device__ __forceinline__ void split(float x, float& big, float& small) {
  big = tf32_rna(x);
  small = tf32_rna(x - big);  // exact difference in fp32
}

// Row-major [rows, K] -> two [rows, Kp] planes (Kp = K rounded up to 4, the
// pad zeroed). One thread per 4 consecutive elements of a padded row.
__global__ void split_rows(const float* __restrict__ x, float* __restrict__ big,
                           float* __restrict__ small, int64_t rows, int K, int Kp, bool vec) {
  const int q = Kp / 4;
  const int64_t n = rows * q;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = i / q;
    const int k = (int)(i - r * q) * 4;
    float v[4];
    if (vec) {  // K % 4 == 0 and 16-byte aligned: K == Kp
      const float4 t = __ldg(reinterpret_cast<const float4*>(x + r * K + k));
      v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = k + e < K ? __ldg(x + r * K + k + e) : 0.0f;
    }
    float4 b, s;
    split(v[0], b.x, s.x);
    split(v[1], b.y, s.y);
    split(v[2], b.z, s.z);
    split(v[3], b.w, s.w);
    *reinterpret_cast<float4*>(big + r * Kp + k) = b;
    *reinterpret_cast<float4*>(small + r * Kp + k) = s;
  }
}

// [batch, K, N] -> two [batch, N, Kp] planes through a 32×32 shared tile.
__global__ void split_transpose(const float* __restrict__ x, float* __restrict__ big,
                                float* __restrict__ small, int K, int N, int Kp) {
  __shared__ float tile[32][33];
  const int n0 = blockIdx.x * 32, k0 = blockIdx.y * 32;
  const int64_t z = blockIdx.z;
  const float* xz = x + z * (int64_t)K * N;
  const int tx = threadIdx.x, ty = threadIdx.y;  // 32 × 8
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int k = k0 + ty + 8 * i, n = n0 + tx;
    tile[ty + 8 * i][tx] = (k < K && n < N) ? __ldg(xz + (int64_t)k * N + n) : 0.0f;
  }
  __syncthreads();
  float* bz = big + z * (int64_t)N * Kp;
  float* sz = small + z * (int64_t)N * Kp;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int n = n0 + ty + 8 * i, k = k0 + tx;
    if (n < N && k < Kp) {
      float b, s;
      split(tile[tx][ty + 8 * i], b, s);
      bz[(int64_t)n * Kp + k] = b;
      sz[(int64_t)n * Kp + k] = s;
    }
  }
}

// ---------------------------------------------------------------------------
// PTX helpers: mbarriers, TMA, wgmma.

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count)
               : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

// A [32 × rows] box of a rank-3 map (k, row, batch) into shared memory,
// counted on `bar` as bytes arrive.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, uint64_t* bar, int k,
                                         int row, int z) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, "
      "%4, %5}], "
      "[%2];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(k), "r"(row), "r"(z)
      : "memory");
}

// Shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups
// 1024 bytes apart (SBO); LBO is unused by swizzled K-major layouts.
__device__ __forceinline__ uint64_t desc(const float* p) {
  const uint64_t a = smem_u32(p);
  return ((a & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 62);
}

__device__ __forceinline__ void wg_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_wait0() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
// Pins registers the async MMAs write, so no access moves across a fence or wait.
template <int N>
__device__ __forceinline__ void pin(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

#define KOPT_D8(i)                                                                            \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])

// d (+)= A·B for a 64 × BN × 8 slice, both operands from shared memory;
// scale_d = 0 starts the sum from zero.
__device__ __forceinline__ void wgmma_tf32(float (&d)[NACC], uint64_t da, uint64_t db,
                                           int scale_d) {
#if KOPT_WGMMA
  if constexpr (BN == 128) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
        "%19, %20, %21, "
        "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, "
        "%40, %41, %42, "
        "%43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, "
        "%61, %62, %63}, "
        "%64, %65, p, 1, 1;\n}\n"
        : KOPT_D8(0), KOPT_D8(8), KOPT_D8(16), KOPT_D8(24), KOPT_D8(32), KOPT_D8(40), KOPT_D8(48),
          KOPT_D8(56)
        : "l"(da), "l"(db), "r"(scale_d));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, "
        "%19, %20, %21, "
        "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1;\n}\n"
        : KOPT_D8(0), KOPT_D8(8), KOPT_D8(16), KOPT_D8(24)
        : "l"(da), "l"(db), "r"(scale_d));
  }
#endif
}

__device__ __forceinline__ float epilogue_op(float v, float bias) {
  v += bias;
#if KOPT_EPILOGUE == 1
  v = (v != v) ? v : fmaxf(v, 0.0f);
#elif KOPT_EPILOGUE == 2
  v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
#elif KOPT_EPILOGUE == 3  // torch's approximate='tanh'
  v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
#endif
#if KOPT_OUT_SCALE_X1000 != 1000
  v *= (float)(KOPT_OUT_SCALE_X1000 / 1000.0);
#endif
  return v;
}

// ---------------------------------------------------------------------------

__global__ void __launch_bounds__(THREADS, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap a_big,
                      const __grid_constant__ CUtensorMap a_small,
                      const __grid_constant__ CUtensorMap b_big,
                      const __grid_constant__ CUtensorMap b_small, const float* __restrict__ bias,
                      float* __restrict__ C, int M, int N, int Kp, int b_batched, bool vec_store,
                      int kt_per_split, float* __restrict__ partial) {
#if KOPT_WGMMA
  extern __shared__ uint8_t smem_raw[];
  // 128-byte swizzled tiles need 1024-byte aligned addresses.
  float* smem =
      reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~(uintptr_t)1023);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_FLOATS);
  uint64_t* empty = full + STAGES;
  auto plane = [&](int stage, int which) -> float* {  // 0 A big, 1 A small, 2 B big, 3 B small
    float* s = smem + stage * STAGE_FLOATS;
    return which < 2 ? s + which * A_TILE : s + 2 * A_TILE + (which - 2) * B_TILE;
  };

  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], CONSUMERS * 128);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();

  // Grouped tile order: GROUP_M tile rows sweep all tile columns together.
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int pid = blockIdx.x;
  const int per_group = GROUP_M * tiles_n;
  const int group = pid / per_group;
  const int first_m = group * GROUP_M;
  const int group_rows = min(tiles_m - first_m, GROUP_M);
  const int in_group = pid - group * per_group;
  const int m0 = (first_m + in_group % group_rows) * BM;
  const int n0 = (in_group / group_rows) * BN;
  // blockIdx.z: the batch, or with `partial` (split K, one GEMM) the split,
  // which covers k tiles [kt0, kt0 + KT) and writes its raw sums to
  // partial[split].
  const int z = partial ? 0 : blockIdx.z;
  const int kt0 = partial ? blockIdx.z * kt_per_split : 0;
  const int KT = partial ? min(kt_per_split, (Kp + BK - 1) / BK - kt0) : (Kp + BK - 1) / BK;

  if (wg == 0) {
    // Producer: one thread keeps STAGES stages in flight.
    if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      const int zb = b_batched ? z : 0;
      for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(&empty[s], ((kt / STAGES) & 1) ^ 1);  // a fresh barrier counts as freed
        mbar_expect_tx(&full[s], STAGE_BYTES);
        const int k = (kt0 + kt) * BK;
        tma_load(plane(s, 0), &a_big, &full[s], k, m0, z);
        tma_load(plane(s, 1), &a_small, &full[s], k, m0, z);
        tma_load(plane(s, 2), &b_big, &full[s], k, n0, zb);
        tma_load(plane(s, 3), &b_small, &full[s], k, n0, zb);
      }
    }
    return;
  }
  if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");

  // Consumer warpgroup c owns tile rows [64c, 64c + 64).
  const int c = wg - 1;
  float acc[NACC], part[NACC];
#pragma unroll
  for (int i = 0; i < NACC; ++i) acc[i] = 0.0f, part[i] = 0.0f;

  for (int kt = 0; kt < KT; ++kt) {
    const int s = kt % STAGES;
    mbar_wait(&full[s], (kt / STAGES) & 1);
    const float* ab = plane(s, 0) + c * 64 * BK;
    const float* as = plane(s, 1) + c * 64 * BK;
    const float* bb = plane(s, 2);
    const float* bs = plane(s, 3);
    pin(part);
    wg_fence();
#pragma unroll
    for (int ks = 0; ks < BK / 8; ++ks) {
      // A k-slice of 8 floats is 32 bytes into each swizzled 128-byte row.
      const int o = ks * 8;
      wgmma_tf32(part, desc(as + o), desc(bb + o), ks != 0);  // small terms first
      wgmma_tf32(part, desc(ab + o), desc(bs + o), 1);
      wgmma_tf32(part, desc(ab + o), desc(bb + o), 1);
    }
    wg_commit();
    wg_wait0();
    pin(part);
    mbar_arrive(&empty[s]);  // this thread's reads of the stage are done
#pragma unroll
    for (int i = 0; i < NACC; ++i) acc[i] += part[i];  // round to nearest
  }

  // Epilogue. Fragment of thread (warp w, lane l): rows 16w + l/4 (+8),
  // columns 8j + 2(l%4) (+1) for j < BN/8, registers 4j .. 4j+3.
  const int t = threadIdx.x - 128 * wg;
  const int w = t / 32, l = t % 32;
  const int row0 = m0 + c * 64 + 16 * w + l / 4;
  float* Cz = partial ? partial + (int64_t)blockIdx.z * M * N : C + (int64_t)z * M * N;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = n0 + 8 * j + 2 * (l % 4);
    float b0 = 0.0f, b1 = 0.0f;
#if KOPT_BIAS
    if (col < N) b0 = __ldg(bias + col);
    if (col + 1 < N) b1 = __ldg(bias + col + 1);
#endif
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h;
      if (row >= M) continue;
      // A split's partial sums stay raw: the reduction applies the epilogue.
      const float v0 = partial ? acc[4 * j + 2 * h] : epilogue_op(acc[4 * j + 2 * h], b0);
      const float v1 = partial ? acc[4 * j + 2 * h + 1] : epilogue_op(acc[4 * j + 2 * h + 1], b1);
      float* dst = Cz + (int64_t)row * N + col;
      if (vec_store) {  // N even and the destination 8-byte aligned: col < N implies col + 1 < N
        if (col < N) *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
      } else {
        if (col < N) dst[0] = v0;
        if (col + 1 < N) dst[1] = v1;
      }
    }
  }
#endif
}

// Split K: C = epilogue(sum of the splits' partial tiles, in split order).
__global__ void splitk_reduce(const float* __restrict__ partial, int splits, int64_t mn, int N,
                              const float* __restrict__ bias, float* __restrict__ C) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < mn;
       i += (int64_t)gridDim.x * blockDim.x) {
    float v = 0.0f;
    for (int s = 0; s < splits; ++s) v += partial[s * mn + i];
    float b = 0.0f;
#if KOPT_BIAS
    b = __ldg(bias + i % N);
#endif
    C[i] = epilogue_op(v, b);
  }
}

// ---------------------------------------------------------------------------

static PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// A rank-3 map over [batch][rows][Kp] floats, boxes of 32 (k) × box_rows.
static bool make_map(CUtensorMap* map, const float* base, int64_t Kp, int64_t rows, int64_t batch,
                     int box_rows) {
  auto encode = encode_fn();
  if (!encode) return false;
  const cuuint64_t dims[3] = {(cuuint64_t)Kp, (cuuint64_t)rows, (cuuint64_t)batch};
  const cuuint64_t strides[2] = {(cuuint64_t)Kp * 4, (cuuint64_t)(Kp * rows) * 4};
  const cuuint32_t box[3] = {(cuuint32_t)BK, (cuuint32_t)box_rows, 1};
  const cuuint32_t elem[3] = {1, 1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, const_cast<float*>(base), dims, strides,
                box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

static int split_into(const float* x, float* big, float* small, int64_t rows, int K, int Kp,
                      cudaStream_t s) {
  const bool vec = K == Kp && (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  const int64_t quads = rows * (Kp / 4);
  const int64_t blocks = (quads + 255) / 256;
  split_rows<<<(unsigned)(blocks < 8192 ? blocks : 8192), 256, 0, s>>>(x, big, small, rows, K, Kp,
                                                                       vec);
  return (int)cudaGetLastError();
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 2 + KOPT_BIAS || n_out != 1) return 1;
  const kopt_tensor &A = in[0], &B = in[1];
  kopt_tensor& Ct = out[0];
  if (A.dtype != KOPT_FLOAT32 || B.dtype != KOPT_FLOAT32 || Ct.dtype != KOPT_FLOAT32) return 2;
  if (!kopt_is_contiguous(A) || !kopt_is_contiguous(B) || !kopt_is_contiguous(Ct)) return 3;

  int64_t M, N, K, batch = 1;
#if KOPT_BATCHED
  if (A.ndim != 3 || B.ndim != 3 || Ct.ndim != 3) return 4;
  batch = A.shape[0];
  M = A.shape[1];
  K = A.shape[2];
  if (B.shape[0] != batch) return 4;
  N = KOPT_TRANS_B ? B.shape[1] : B.shape[2];
  if ((KOPT_TRANS_B ? B.shape[2] : B.shape[1]) != K) return 4;
  if (Ct.shape[0] != batch || Ct.shape[1] != M || Ct.shape[2] != N) return 4;
#else
  if (A.ndim < 2 || B.ndim != 2 || Ct.ndim != A.ndim) return 4;
  K = A.shape[A.ndim - 1];
  M = 1;
  for (int d = 0; d + 1 < A.ndim; ++d) M *= A.shape[d];  // leading dims fold into M
  N = KOPT_TRANS_B ? B.shape[0] : B.shape[1];
  if ((KOPT_TRANS_B ? B.shape[1] : B.shape[0]) != K) return 4;
  for (int d = 0; d + 1 < A.ndim; ++d)
    if (Ct.shape[d] != A.shape[d]) return 4;
  if (Ct.shape[Ct.ndim - 1] != N) return 4;
#endif
  const float* bias = nullptr;
#if KOPT_BIAS
  {
    const kopt_tensor& Bi = in[2];
    if (Bi.dtype != KOPT_FLOAT32 || kopt_numel(Bi) != N || !kopt_is_contiguous(Bi)) return 2;
    bias = static_cast<const float*>(Bi.data);
  }
#endif
  if (M == 0 || N == 0 || batch == 0) return 0;
  if (M > 0x7fffff00LL || N > 0x7fffff00LL || K > 0x7fffff00LL || batch > 65535) return 5;

  cudaStream_t s = (cudaStream_t)stream;
  static bool configured = false;
  static int sms = 0;
  if (!configured) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return 7;
    int built = 0;
    if (cudaMemcpyFromSymbol(&built, kopt_wgmma_built, sizeof built) != cudaSuccess || !built)
      return 9;
    if (!encode_fn()) return 10;
    cudaError_t e = cudaFuncSetAttribute(gemm_wgmma_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (e != cudaSuccess) return (int)e;
    configured = true;
  }

  // Split planes: A big, A small [batch·M, Kp]; B big, B small [batchB·N, Kp].
  // K == 0 still gets one zero quad per row: the result is the epilogue of zeros.
  const int64_t Kp = K == 0 ? 4 : (K + 3) / 4 * 4;
  const int64_t batch_b = KOPT_BATCHED ? batch : 1;
  const int64_t a_elems = batch * M * Kp, b_elems = batch_b * N * Kp;
  // Split K where the tiles alone would leave most SMs idle (one GEMM):
  // at least 4 k tiles per split, about one block per SM in all.
  const int64_t tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  const int64_t KT = (Kp + BK - 1) / BK;
  int64_t splits = 1, kt_per_split = KT;
  if (SPLIT_K && batch == 1 && 2 * tiles <= sms && KT >= 8) {
    splits = (sms + tiles - 1) / tiles;
    if (splits > KT / 4) splits = KT / 4;
    kt_per_split = (KT + splits - 1) / splits;
    splits = (KT + kt_per_split - 1) / kt_per_split;
  }
  const int64_t p_elems = splits > 1 ? splits * M * N : 0;
  float* scratch = static_cast<float*>(
      kopt_scratch((size_t)(2 * a_elems + 2 * b_elems + p_elems) * sizeof(float)));
  if (!scratch) return 8;
  float *ab = scratch, *as = ab + a_elems, *bb = as + a_elems, *bs = bb + b_elems;
  float* partial = splits > 1 ? bs + b_elems
                              : nullptr;  // 16-byte aligned: every plane is a multiple of 4 floats

  int rc = split_into(static_cast<const float*>(A.data), ab, as, batch * M, (int)K, (int)Kp, s);
  if (rc) return rc;
#if KOPT_TRANS_B
  rc = split_into(static_cast<const float*>(B.data), bb, bs, batch_b * N, (int)K, (int)Kp, s);
  if (rc) return rc;
#else
  {
    const dim3 grid((unsigned)((N + 31) / 32), (unsigned)((Kp + 31) / 32), (unsigned)batch_b);
    if (grid.y > 65535) return 5;
    split_transpose<<<grid, dim3(32, 8), 0, s>>>(static_cast<const float*>(B.data), bb, bs, (int)K,
                                                 (int)N, (int)Kp);
    if (cudaGetLastError() != cudaSuccess) return 7;
  }
#endif

  CUtensorMap m_ab, m_as, m_bb, m_bs;
  if (!make_map(&m_ab, ab, Kp, M, batch, BM) || !make_map(&m_as, as, Kp, M, batch, BM) ||
      !make_map(&m_bb, bb, Kp, N, batch_b, BN) || !make_map(&m_bs, bs, Kp, N, batch_b, BN))
    return 11;

  float* c = static_cast<float*>(Ct.data);
  const bool vec_store =
      ((reinterpret_cast<uintptr_t>(partial ? partial : c) & 7) == 0) && N % 2 == 0;
  if (tiles > 0x7fffffffLL) return 5;
  gemm_wgmma_kernel<<<dim3((unsigned)tiles, 1, (unsigned)(partial ? splits : batch)), THREADS,
                      SMEM_BYTES, s>>>(m_ab, m_as, m_bb, m_bs, bias, c, (int)M, (int)N, (int)Kp,
                                       KOPT_BATCHED, vec_store, (int)kt_per_split, partial);
  if (cudaGetLastError() != cudaSuccess) return 7;
  if (partial) {
    const int64_t mn = M * N, blocks = (mn + 255) / 256;
    splitk_reduce<<<(unsigned)(blocks < 8192 ? blocks : 8192), 256, 0, s>>>(partial, (int)splits,
                                                                            mn, (int)N, bias, c);
  }
  return (int)cudaGetLastError();
}
