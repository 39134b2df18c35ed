// FLAW (special_function_overhead): y = sum_{k=1..64} exp(-(k/64) x^2) with 64
// exponentials per element, each one MUFU.EX2 (ex2.approx.ftz on a pre-scaled
// argument): one FMUL, one MUFU and one FADD per term, so the XU pipe (16
// lanes per SM against 128 FP32 lanes) is the bottleneck. The algebra allows
// one exponential per element: exp(-(k/64) x^2) = e^k with e = exp(-x^2/64).
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ float ex2_approx(float a) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}

// exp(x2 * (-k/64)) = 2^(x2 * (-k/64 * log2 e)); terms summed in k order like the reference.
__device__ __forceinline__ float exp_sum1(float x) {
  const float x2 = x * x;
  float y = 0.0f;
#pragma unroll
  for (int k = 1; k <= 64; ++k) {
    const float c = (float)(-(double)k / 64.0 * 1.4426950408889634);
    y = y + ex2_approx(x2 * c);
  }
  return y;
}

__global__ void __launch_bounds__(256)
exp_sum_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
  const int64_t i = (int64_t)blockIdx.x * 256 + threadIdx.x;
  if (i >= n4) return;
  const float4 v = x[i];
  y[i] = make_float4(exp_sum1(v.x), exp_sum1(v.y), exp_sum1(v.z), exp_sum1(v.w));
}

__global__ void exp_sum_any(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = exp_sum1(x[i]);
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const int64_t n = kopt_numel(X);
  if (kopt_numel(Y) != n) return 4;
  if (n == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  const float* xs = static_cast<const float*>(X.data);
  float* ys = static_cast<float*>(Y.data);
  const bool aligned = ((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0;
  if (aligned && n % 4 == 0 && (n / 4 + 255) / 256 <= 0x7fffffffLL) {
    exp_sum_vec4<<<(unsigned)((n / 4 + 255) / 256), 256, 0, s>>>(
        reinterpret_cast<const float4*>(xs), reinterpret_cast<float4*>(ys), n / 4);
  } else {
    exp_sum_any<<<1024, 256, 0, s>>>(xs, ys, n);
  }
  return (int)cudaGetLastError();
}
