// Strict-fp32 GEMM on tensor cores by split precision (3xTF32): C = A·B (+bias)
// (then ReLU / exact GELU, then a constant scale), float32 in and out, with an
// error at the level of an fp32 SIMT GEMM.
//
// Each operand element x is split as x = big + small, big = tf32(x) and
// small = tf32(x - big) (both rounded to nearest; x - big is exact in fp32;
// see split_tf32),
// so big + small carries 22 of x's 24 significand bits. Each 8-deep slice of
// the product is then three tensor-core MMAs summed from zero in a per-slice
// partial p = a_small·b_big + a_big·b_small + a_big·b_big (small terms first),
// then acc += p by a round-to-nearest FADD (the tensor core accumulates with
// round-toward-zero, whose bias grows with K when it holds the running sum);
// the dropped a_small·b_small is ~2^-22 of a·b.
//
// Structure: a block computes a BM×BN tile of C with (BM/WM)·(BN/WN) warps,
// each a WM×WN warp tile made of 16×8 mma.sync.m16n8k8 tf32 tiles. A and B
// stream through STAGES shared-memory buffers of BK-deep slices by cp.async
// (16-byte copies with zero-fill when K, N and the pointers allow, else 4-byte
// copies), so rows and columns past M, N and K read as zeros. Inside each
// 8-deep slice the k positions are permuted consistently for A and B (mma
// k-slot t holds k = 2t, slot t+4 holds k = 2t+1), which lets A (and B when
// transposed) be read as one float2 per fragment pair. Shared rows are padded
// (A and [N,K] B by 8 floats, [K,N] B by 4) so fragment reads are free of bank
// conflicts. Tiles are visited in groups of GROUP_M tile rows for L2 reuse.
// The epilogue adds the bias, applies the activation and the scale straight
// from registers and stores float2 pairs (scalar stores where N is odd or C
// unaligned).
//
// Inputs: in[0] = A [M,K] (or [..., M, K]: leading dims fold into M when not
// batched), in[1] = B [K,N] (or [N,K] with KOPT_TRANS_B), in[2] = bias [N]
// with KOPT_BIAS; batched: A [b,M,K], B [b,K,N] / [b,N,K], C [b,M,N].
// Contiguous float32 only; anything else returns nonzero.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

#define KOPT_TRANS_B 0  // slot: B layout: 0 = B is [K,N] (A @ B), 1 = B is [N,K] (A @ B.T, nn.Linear's weight)
#define KOPT_BATCHED 0  // slot: 0 = one GEMM (A may have leading dims folded into M), 1 = batched bmm: A [b,M,K], B [b,K,N] or [b,N,K], C [b,M,N]
#define KOPT_BIAS 0  // slot: 0 = no bias, 1 = in[2] is a bias of shape [N] added to every row (addmm / nn.Linear)
#define KOPT_EPILOGUE 0  // slot: activation after the bias: 0 = none, 1 = ReLU, 2 = GELU (exact, erf)
#define KOPT_OUT_SCALE_X1000 1000  // slot: output multiplied by this / 1000 after the activation (1000 = no scaling)

// kopt:knob BM 128 {64,128,256} block tile rows: larger reuses B more per load, fewer blocks for small M
constexpr int BM = 128;
// kopt:knob BN 128 {64,128,256} block tile columns: larger reuses A more per load, fewer blocks for small N
constexpr int BN = 128;
// kopt:knob BK 32 {16,32,64} depth of one pipeline stage: deeper means fewer barriers, more shared memory per stage
constexpr int BK = 32;
// kopt:knob WM 64 {32,64,128} warp tile rows: larger reuses B fragments more, more accumulator registers
constexpr int WM = 64;
// kopt:knob WN 64 {16,32,64} warp tile columns: larger reuses A fragments more, more accumulator registers
constexpr int WN = 64;
// kopt:knob STAGES 3 {2,3,4,5} shared-memory pipeline depth: more loads in flight, more shared memory (fewer blocks per SM)
constexpr int STAGES = 3;
// kopt:knob GROUP_M 8 {1,8} tile rows visited together: L2 reuse of B tiles across neighbouring blocks
constexpr int GROUP_M = 8;
// kopt:knob MIN_BLOCKS 1 {1,2} blocks per SM promised to ptxas (__launch_bounds__): 2 caps registers at 32768/threads for occupancy, at the risk of spills
constexpr int MIN_BLOCKS = 1;
// kopt:constraint BM % WM == 0 && BN % WN == 0 && (BM / WM) * (BN / WN) <= 8
// kopt:constraint WM * WN / 32 + WN / 2 + 48 <= 255
// kopt:constraint STAGES * (BM + BN) * (BK + 8) * 4 <= 232448
// kopt:constraint MIN_BLOCKS == 1 || ((BM / WM) * (BN / WN) * 64 * (WM * WN / 32 + WN / 2 + 48) <= 65536 && STAGES * (BM + BN) * (BK + 8) * 4 <= 115712)

constexpr int WARPS_M = BM / WM;
constexpr int WARPS_N = BN / WN;
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int MI = WM / 16;  // m16 tiles per warp
constexpr int NI = WN / 8;   // n8 tiles per warp
// n8 tiles whose split B fragments are held at once in the mainloop (at most
// 4: 16 registers, room left for the per-slice partial sums).
constexpr int JC = NI < 2 ? NI : 2;

// Shared-memory leading dimensions (floats) and per-stage sizes.
constexpr int LDA = BK + 8;                                // A stage: [BM][BK+8]
constexpr int LDB = KOPT_TRANS_B ? (BK + 8) : (BN + 4);    // B stage: [BN][BK+8] or [BK][BN+4]
constexpr int A_STAGE = BM * LDA;
constexpr int B_STAGE = KOPT_TRANS_B ? BN * LDB : BK * LDB;
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * (int)sizeof(float);

static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must divide the block tile");
static_assert(WM % 16 == 0 && WN % 8 == 0 && BK % 8 == 0, "mma tile shape");
static_assert(THREADS <= 1024, "too many threads");
static_assert(STAGES >= 2, "pipeline needs two stages");
static_assert(SMEM_BYTES <= 232448, "shared memory per block exceeds 227 KB");
static_assert(KOPT_EPILOGUE >= 0 && KOPT_EPILOGUE <= 2, "KOPT_EPILOGUE is 0, 1 or 2");

// ---------------------------------------------------------------------------
// PTX helpers

__device__ __forceinline__ void cp_async16(float* smem, const float* gmem, int src_bytes) {
  const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(float* smem, const float* gmem, int src_bytes) {
  const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// x = big + small (+ a residual of at most 2^-22 |x|), both tf32 values with
// zero low 13 bits: big = cvt.rna.tf32.f32(x), small = cvt.rna.tf32.f32(x - big)
// (x - big is exact in fp32). Finite inputs only: |x| near FLT_MAX rounds big
// to inf (then small is NaN).
__device__ __forceinline__ uint32_t cvt_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small) {
  big = cvt_tf32(x);
  small = cvt_tf32(x - __uint_as_float(big));
}

// D = A·B + D for one 16×8×8 tile. A fragment (row-major 16×8), lane = 4g + t:
// a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); B fragment (8×8, "col"):
// b0 (k=t, n=g), b1 (k=t+4, n=g); C: c0,c1 (g, 2t..2t+1), c2,c3 (g+8, 2t..2t+1).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Fragment loads with the split. k-slot permutation, identical for A and B:
// mma k-slot t holds k = kk + 2t, slot t+4 holds k = kk + 2t + 1 (a sum does
// not care about the order), so A (and [N,K] B) pairs are one float2 read.
// a_p points at (row g, k = kk + 2t) of an m16 tile: a0 (g, slot t),
// a1 (g+8, slot t), a2 (g, slot t+4), a3 (g+8, slot t+4).
__device__ __forceinline__ void load_split_a(const float* a_p, uint32_t (&ab)[4], uint32_t (&as)[4]) {
  const float2 lo = *reinterpret_cast<const float2*>(a_p);            // row g:   k = 2t, 2t+1
  const float2 hi = *reinterpret_cast<const float2*>(a_p + 8 * LDA);  // row g+8: k = 2t, 2t+1
  split_tf32(lo.x, ab[0], as[0]);
  split_tf32(hi.x, ab[1], as[1]);
  split_tf32(lo.y, ab[2], as[2]);
  split_tf32(hi.y, ab[3], as[3]);
}
// b_s points at (n = g, k = 2t) of the warp's first n8 tile: b0 (k = kk + 2t,
// slot t), b1 (k = kk + 2t + 1, slot t+4), column n = j*8 + g.
__device__ __forceinline__ void load_split_b(const float* b_s, int kk, int j, uint32_t (&bb)[2], uint32_t (&bs)[2]) {
#if KOPT_TRANS_B
  const float2 v = *reinterpret_cast<const float2*>(b_s + j * 8 * LDB + kk);
  const float x0 = v.x, x1 = v.y;
#else
  const float x0 = b_s[kk * LDB + j * 8];
  const float x1 = b_s[(kk + 1) * LDB + j * 8];
#endif
  split_tf32(x0, bb[0], bs[0]);
  split_tf32(x1, bb[1], bs[1]);
}
// acc += a·b for one 16×8×8 slice: a_small·b_big + a_big·b_small + a_big·b_big
// (small terms first) summed from zero in the tensor core, then added to acc
// with round-to-nearest.
__device__ __forceinline__ void mma_3xtf32(float (&acc)[4], const uint32_t (&ab)[4], const uint32_t (&as)[4],
                                           const uint32_t (&bb)[2], const uint32_t (&bs)[2]) {
  float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  mma_tf32(p, as, bb[0], bb[1]);
  mma_tf32(p, ab, bs[0], bs[1]);
  mma_tf32(p, ab, bb[0], bb[1]);
#pragma unroll
  for (int e = 0; e < 4; ++e) acc[e] += p[e];
}

// ---------------------------------------------------------------------------
// Global -> shared tile copy: ROWS×COLS floats starting at global (r0, c0) of
// a row-major matrix with leading dimension ld and valid extent rows×cols,
// into smem with leading dimension LDS. Out-of-range elements become zeros.

template <int ROWS, int COLS, int LDS, bool VEC>
__device__ __forceinline__ void load_tile(float* __restrict__ s, const float* __restrict__ g, int rows, int cols,
                                          int64_t ld, int r0, int c0, int tid) {
  constexpr int CPR = COLS / 4;  // 16-byte chunks per row
  constexpr int CHUNKS = ROWS * CPR;
  if constexpr (THREADS % CPR == 0) {
    // Each thread copies one fixed 16-byte column chunk of rows r, r+RSTEP, ...:
    // one pointer walked down the rows keeps the address registers few.
    constexpr int RSTEP = THREADS / CPR;
    constexpr int ITERS = (ROWS + RSTEP - 1) / RSTEP;
    const int r = tid / CPR, cc = (tid % CPR) * 4;
    const int gc = c0 + cc;
    const float* p = g + (int64_t)(r0 + r) * ld + gc;
    const int64_t step = (int64_t)RSTEP * ld;
    float* dst = s + r * LDS + cc;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int rr = r + it * RSTEP;
      if (ROWS % RSTEP == 0 || rr < ROWS) {
        const bool row_ok = r0 + rr < rows;
        if (VEC) {  // cols % 4 == 0 and 16-byte aligned rows: a chunk is all in or all out
          const bool ok = row_ok && gc < cols;
          cp_async16(dst + it * RSTEP * LDS, ok ? p : g, ok ? 16 : 0);
        } else {  // unaligned rows: element copies, each bounds-checked
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const bool ok = row_ok && gc + e < cols;
            cp_async4(dst + it * RSTEP * LDS + e, ok ? p + e : g, ok ? 4 : 0);
          }
        }
      }
      p += step;
    }
  } else {
    constexpr int ITERS = (CHUNKS + THREADS - 1) / THREADS;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int c = it * THREADS + tid;
      if (CHUNKS % THREADS == 0 || c < CHUNKS) {
        const int r = c / CPR, cc = (c % CPR) * 4;
        const int gr = r0 + r, gc = c0 + cc;
        float* dst = s + r * LDS + cc;
        if (VEC) {
          const bool ok = gr < rows && gc < cols;
          cp_async16(dst, ok ? g + (int64_t)gr * ld + gc : g, ok ? 16 : 0);
        } else {  // unaligned rows: element copies, each bounds-checked
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const bool ok = gr < rows && gc + e < cols;
            cp_async4(dst + e, ok ? g + (int64_t)gr * ld + gc + e : g, ok ? 4 : 0);
          }
        }
      }
    }
  }
}

__device__ __forceinline__ float epilogue_op(float v, float bias) {
  v += bias;
#if KOPT_EPILOGUE == 1
  v = (v != v) ? v : fmaxf(v, 0.0f);
#elif KOPT_EPILOGUE == 2
  v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
#endif
#if KOPT_OUT_SCALE_X1000 != 1000
  v *= (float)(KOPT_OUT_SCALE_X1000 / 1000.0);
#endif
  return v;
}

// ---------------------------------------------------------------------------

template <bool VEC>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
gemm_3xtf32_kernel(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
                   float* __restrict__ C, int M, int N, int K, bool vec_store) {
  extern __shared__ __align__(16) float smem[];
  float* sA = smem;                      // STAGES × A_STAGE
  float* sB = smem + STAGES * A_STAGE;   // STAGES × B_STAGE

  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;

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

#if KOPT_BATCHED
  const int64_t z = blockIdx.z;
  A += z * (int64_t)M * K;
  B += z * (int64_t)K * N;
  C += z * (int64_t)M * N;
#endif

  auto load_stage = [&](int stage, int kt) {
    const int k0 = kt * BK;
    load_tile<BM, BK, LDA, VEC>(sA + stage * A_STAGE, A, M, K, K, m0, k0, tid);
#if KOPT_TRANS_B
    load_tile<BN, BK, LDB, VEC>(sB + stage * B_STAGE, B, N, K, K, n0, k0, tid);
#else
    load_tile<BK, BN, LDB, VEC>(sB + stage * B_STAGE, B, K, N, N, k0, n0, tid);
#endif
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int KT = (K + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_stage(s, s);
    cp_async_commit();  // always commit, so group counting stays uniform
  }

  int read_stage = 0, write_stage = STAGES - 1;
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<STAGES - 2>();  // tile kt has landed (this thread's copies)
    __syncthreads();              // ... everyone's, and stage (kt-1) is free
    if (kt + STAGES - 1 < KT) load_stage(write_stage, kt + STAGES - 1);
    cp_async_commit();
    write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;

    const float* a_s = sA + read_stage * A_STAGE + (wm * WM + g) * LDA + 2 * t;
#if KOPT_TRANS_B
    const float* b_s = sB + read_stage * B_STAGE + (wn * WN + g) * LDB + 2 * t;
#else
    const float* b_s = sB + read_stage * B_STAGE + (2 * t) * LDB + wn * WN + g;
#endif
    read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
    // One 8-deep k-slice per iteration. The tensor core rounds its fp32
    // accumulation toward zero, so chaining the MMAs into the K-long running
    // sum biases it by ~1/2 ulp per MMA (3e-5 relative at K = 4096, growing
    // with K). Instead each slice's three products are summed from zero in the
    // tensor core (truncation relative to the slice only) and added to the
    // accumulator by a round-to-nearest FADD: fp32 SIMT-like accumulation.
    // Not unrolled: unrolling lets ptxas overlap slices and spill at 255.
#pragma unroll 1
    for (int kk = 0; kk < BK; kk += 8) {
      // B fragments of JC n-tiles at a time split once (4 registers each);
      // A fragments split per m-tile under them (redone NI / JC times).
#pragma unroll
      for (int j0 = 0; j0 < NI; j0 += JC) {
        uint32_t bb[JC][2], bs[JC][2];
#pragma unroll
        for (int j = 0; j < JC; ++j) load_split_b(b_s, kk, j0 + j, bb[j], bs[j]);
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          uint32_t ab[4], as[4];
          load_split_a(a_s + i * 16 * LDA + kk, ab, as);
#pragma unroll
          for (int j = 0; j < JC; ++j) mma_3xtf32(acc[i][j0 + j], ab, as, bb[j], bs[j]);
        }
      }
    }
  }
  cp_async_wait<0>();  // nothing may be left in flight when the block exits

  // Epilogue: straight from the accumulators.
#pragma unroll
  for (int j = 0; j < NI; ++j) {
    const int col = n0 + wn * WN + j * 8 + 2 * t;
    float b0 = 0.0f, b1 = 0.0f;
#if KOPT_BIAS
    if (col < N) b0 = __ldg(bias + col);
    if (col + 1 < N) b1 = __ldg(bias + col + 1);
#endif
#pragma unroll
    for (int i = 0; i < MI; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + wm * WM + i * 16 + g + 8 * h;
        if (row >= M) continue;
        const float v0 = epilogue_op(acc[i][j][2 * h], b0);
        const float v1 = epilogue_op(acc[i][j][2 * h + 1], b1);
        float* dst = C + (int64_t)row * N + col;
        if (vec_store) {  // N even and C 8-byte aligned: col < N implies col + 1 < N
          if (col < N) *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
        } else {
          if (col < N) dst[0] = v0;
          if (col + 1 < N) dst[1] = v1;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------

template <bool VEC>
static int launch(const float* a, const float* b, const float* bias, float* c, int M, int N, int K, int batch,
                  bool vec_store, cudaStream_t stream) {
  auto kernel = gemm_3xtf32_kernel<VEC>;
  static bool configured = false;
  if (!configured) {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    if (e != cudaSuccess) return (int)e;
    // All of the unified L1/shared array as shared memory, so two default blocks fit per SM.
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    if (e != cudaSuccess) return (int)e;
    configured = true;
  }
  const int64_t tiles = (int64_t)((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  if (tiles > 0x7fffffffLL || batch > 65535) return 5;
  dim3 grid((unsigned)tiles, 1, (unsigned)batch);
  kernel<<<grid, THREADS, SMEM_BYTES, stream>>>(a, b, bias, c, M, N, K, vec_store);
  return (int)cudaGetLastError();
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
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
  if (M > 0x7fffff00LL || N > 0x7fffff00LL || K > 0x7fffff00LL) return 5;  // tile sums stay in int

  const float* a = static_cast<const float*>(A.data);
  const float* b = static_cast<const float*>(B.data);
  float* c = static_cast<float*>(Ct.data);
  const bool aligned16 = ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) & 15) == 0;
  // 16-byte copies need every row start (and every batch offset) 16-byte aligned.
  const bool vec = aligned16 && K % 4 == 0 && (KOPT_TRANS_B || N % 4 == 0);
  const bool vec_store = (reinterpret_cast<uintptr_t>(c) & 7) == 0 && N % 2 == 0;
  cudaStream_t s = (cudaStream_t)stream;
  return vec ? launch<true>(a, b, bias, c, (int)M, (int)N, (int)K, (int)batch, vec_store, s)
             : launch<false>(a, b, bias, c, (int)M, (int)N, (int)K, (int)batch, vec_store, s);
}
