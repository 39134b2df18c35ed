// FLAW (warp_divergence): both polynomials with fmaf, but the work is split
// by lane parity: even lanes compute P, odd lanes Q of the same float4. Each
// warp runs the P loop with 16 of 32 lanes active, then the Q loop with the
// other 16: twice the issue slots of poly_fma.cu for the same FLOPs.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int kDegree = 384;
// The task's buffers cp, cq (inputs 1, 2), copied into constant memory on the
// call's stream every call (uniform reads, no shared-memory traffic).
// Not safe for two concurrent calls on different streams.
__constant__ float c_p[kDegree + 1];
__constant__ float c_q[kDegree + 1];

// Thread t: float4 group t / 2; even lanes evaluate P, odd lanes Q. Every warp
// splits 16/16 between the two branches, which run one after the other.
__global__ void __launch_bounds__(256)
poly2_lane_split(const float4* __restrict__ x, float4* __restrict__ p_out, float4* __restrict__ q_out,
                 int64_t n4) {
  const int64_t t = (int64_t)blockIdx.x * 256 + threadIdx.x;
  const int64_t i = t >> 1;
  if (i >= n4) return;
  const float4 v = x[i];
  if ((t & 1) == 0) {
    float4 a = make_float4(c_p[kDegree], c_p[kDegree], c_p[kDegree], c_p[kDegree]);
#pragma unroll 16
    for (int k = kDegree - 1; k >= 0; --k) {
      const float c = c_p[k];
      a.x = fmaf(a.x, v.x, c); a.y = fmaf(a.y, v.y, c); a.z = fmaf(a.z, v.z, c); a.w = fmaf(a.w, v.w, c);
    }
    p_out[i] = a;
  } else {
    float4 a = make_float4(c_q[kDegree], c_q[kDegree], c_q[kDegree], c_q[kDegree]);
#pragma unroll 8
    for (int k = kDegree - 1; k >= 0; --k) {
      const float c = c_q[k];
      a.x = fmaf(a.x, v.x, c); a.y = fmaf(a.y, v.y, c); a.z = fmaf(a.z, v.z, c); a.w = fmaf(a.w, v.w, c);
    }
    q_out[i] = a;
  }
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
    const int64_t n4 = n / 4, blocks = (2 * n4 + 255) / 256;
    if (blocks > 0x7fffffffLL) return 5;
    poly2_lane_split<<<(unsigned)blocks, 256, 0, s>>>(reinterpret_cast<const float4*>(xs),
        reinterpret_cast<float4*>(ps), reinterpret_cast<float4*>(qs), n4);
    return (int)cudaGetLastError();
  }
  poly2_any<<<1024, 256, 0, s>>>(xs, ps, qs, n);
  return (int)cudaGetLastError();
}
