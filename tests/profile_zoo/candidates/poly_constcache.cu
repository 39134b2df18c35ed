// FLAW (warp_stalls: imc_miss), found on the H200. This file was the zoo's
// "good" FP32-roof kernel (poly_fma.cu) when it was recorded on 2026-12-02;
// only this comment changed since. Both polynomials by Horner's rule with
// fmaf, 8 independent FFMA chains per thread, but the coefficients come from
// __constant__ arrays read with a run-time index (the loop is unrolled only
// 16 ways): 6 KB of constants for every thread. On the H200 89% of the stall
// cycles were constant-cache misses (imc_miss) and the FMA pipe ran at 6%.
// poly_fma.cu now stages the coefficients in shared memory instead.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int kDegree = 384;
// The task's buffers cp, cq (inputs 1, 2), copied into constant memory on the
// call's stream every call (uniform reads, no shared-memory traffic).
// Not safe for two concurrent calls on different streams.
__constant__ float c_p[kDegree + 1];
__constant__ float c_q[kDegree + 1];

// Thread i: elements 4i .. 4i+3 (one float4), both polynomials: 8 independent
// Horner chains per thread.
__global__ void __launch_bounds__(256)
poly2_fma(const float4* __restrict__ x, float4* __restrict__ p_out, float4* __restrict__ q_out,
        int64_t n4) {
  const int64_t i = (int64_t)blockIdx.x * 256 + threadIdx.x;
  if (i >= n4) return;
  const float4 v = x[i];
  float4 p = make_float4(c_p[kDegree], c_p[kDegree], c_p[kDegree], c_p[kDegree]);
  float4 q = make_float4(c_q[kDegree], c_q[kDegree], c_q[kDegree], c_q[kDegree]);
#pragma unroll 16
  for (int k = kDegree - 1; k >= 0; --k) {
    const float cp = c_p[k], cq = c_q[k];
    p.x = fmaf(p.x, v.x, cp); p.y = fmaf(p.y, v.y, cp);
    p.z = fmaf(p.z, v.z, cp); p.w = fmaf(p.w, v.w, cp);
    q.x = fmaf(q.x, v.x, cq); q.y = fmaf(q.y, v.y, cq);
    q.z = fmaf(q.z, v.z, cq); q.w = fmaf(q.w, v.w, cq);
  }
  p_out[i] = p;
  q_out[i] = q;
}

__global__ void poly2_any(const float* __restrict__ x, float* __restrict__ p_out,
                          float* __restrict__ q_out, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    float p = c_p[kDegree], q = c_q[kDegree];
    for (int k = kDegree - 1; k >= 0; --k) {
      p = fmaf(p, v, c_p[k]);
      q = fmaf(q, v, c_q[k]);
    }
    p_out[i] = p;
    q_out[i] = q;
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 3 || n_out != 2) return 1;
  const kopt_tensor &X = in[0], &CP = in[1], &CQ = in[2];
  kopt_tensor &P = out[0], &Q = out[1];
  if (X.dtype != KOPT_FLOAT32 || CP.dtype != KOPT_FLOAT32 || CQ.dtype != KOPT_FLOAT32 ||
      P.dtype != KOPT_FLOAT32 || Q.dtype != KOPT_FLOAT32)
    return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(CP) || !kopt_is_contiguous(CQ) ||
      !kopt_is_contiguous(P) || !kopt_is_contiguous(Q))
    return 3;
  const int64_t n = kopt_numel(X);
  if (kopt_numel(CP) != kDegree + 1 || kopt_numel(CQ) != kDegree + 1 || kopt_numel(P) != n ||
      kopt_numel(Q) != n)
    return 4;
  cudaStream_t s = (cudaStream_t)stream;
  cudaError_t e = cudaMemcpyToSymbolAsync(c_p, CP.data, sizeof(float) * (kDegree + 1), 0,
                                          cudaMemcpyDeviceToDevice, s);
  if (e == cudaSuccess)
    e = cudaMemcpyToSymbolAsync(c_q, CQ.data, sizeof(float) * (kDegree + 1), 0,
                                cudaMemcpyDeviceToDevice, s);
  if (e != cudaSuccess) return (int)e;
  if (n == 0) return 0;
  const float* xs = static_cast<const float*>(X.data);
  float* ps = static_cast<float*>(P.data);
  float* qs = static_cast<float*>(Q.data);
  const bool aligned = ((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ps) |
                         reinterpret_cast<uintptr_t>(qs)) & 15) == 0;
  if (aligned && n % 4 == 0) {
    const int64_t n4 = n / 4, blocks = (n4 + 255) / 256;
    if (blocks > 0x7fffffffLL) return 5;
    poly2_fma<<<(unsigned)blocks, 256, 0, s>>>(reinterpret_cast<const float4*>(xs),
        reinterpret_cast<float4*>(ps), reinterpret_cast<float4*>(qs), n4);
    return (int)cudaGetLastError();
  }
  poly2_any<<<1024, 256, 0, s>>>(xs, ps, qs, n);
  return (int)cudaGetLastError();
}
