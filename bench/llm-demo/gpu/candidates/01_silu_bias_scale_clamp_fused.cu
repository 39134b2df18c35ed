// clamp((x * sigmoid(x) + bias[c]) * 1.5, -0.5, 2.5) on an NCHW tensor in one
// pass (inputs: x, bias of shape (C, 1, 1)). float4 loads and stores when
// H*W % 4 == 0 (a float4 never straddles two channels), else scalar. The
// scale and the clamp bounds are the task's get_init_inputs() values
// (constructor arguments are not visible through the ABI). NaN stays NaN, as
// torch.clamp keeps it.
#include <cuda_runtime.h>
#include <kopt/abi.h>
#include <stdint.h>

constexpr int THREADS = 256;
constexpr float SCALE = 1.5f, LO = -0.5f, HI = 2.5f;

__device__ __forceinline__ float f(float v, float b) {
  float y = (v / (1.0f + expf(-v)) + b) * SCALE;
  return y != y ? y : fminf(fmaxf(y, LO), HI);
}

__global__ void __launch_bounds__(THREADS)
    fused_vec4_kernel(const float4* __restrict__ x, const float* __restrict__ bias,
                      float4* __restrict__ y, unsigned n4, unsigned hw4, unsigned c) {
  const unsigned i = blockIdx.x * THREADS + threadIdx.x;  // n4 < 2^31: 32-bit division
  if (i >= n4) return;
  const float b = bias[(i / hw4) % c];
  float4 v = x[i];
  v.x = f(v.x, b);
  v.y = f(v.y, b);
  v.z = f(v.z, b);
  v.w = f(v.w, b);
  y[i] = v;
}

__global__ void fused_scalar_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                    float* __restrict__ y, int64_t n, int64_t hw, int64_t c) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = f(x[i], bias[(i / hw) % c]);
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 2 || n_out != 1) return 1;  // x, bias
  const kopt_tensor &X = in[0], &B = in[1];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || B.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32) return 2;
  if (X.ndim != 4 || !kopt_is_contiguous(X) || !kopt_is_contiguous(B) || !kopt_is_contiguous(Y))
    return 3;
  const int64_t c = X.shape[1], hw = X.shape[2] * X.shape[3];
  const int64_t n = kopt_numel(X);
  if (kopt_numel(Y) != n || kopt_numel(B) != c) return 4;
  if (n == 0) return 0;
  const float* xs = static_cast<const float*>(X.data);
  const float* bs = static_cast<const float*>(B.data);
  float* ys = static_cast<float*>(Y.data);
  cudaStream_t s = (cudaStream_t)stream;
  const bool aligned =
      ((reinterpret_cast<uintptr_t>(xs) | reinterpret_cast<uintptr_t>(ys)) & 15) == 0;
  if (aligned && hw % 4 == 0 && n / 4 < 0x7fffffffLL - THREADS) {
    const int64_t n4 = n / 4;
    const int64_t blocks = (n4 + THREADS - 1) / THREADS;
    fused_vec4_kernel<<<(unsigned)blocks, THREADS, 0, s>>>(
        reinterpret_cast<const float4*>(xs), bs, reinterpret_cast<float4*>(ys), (unsigned)n4,
        (unsigned)(hw / 4), (unsigned)c);
  } else {
    fused_scalar_kernel<<<132 * 16, THREADS, 0, s>>>(xs, bs, ys, n, hw, c);
  }
  return (int)cudaGetLastError();
}
