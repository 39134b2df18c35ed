// MaxPool2d(kernel 3, stride 2, padding 1) on contiguous NCHW fp32: one
// thread per output element (consecutive threads -> consecutive output
// columns, so the stride-2 input reads of a warp stay within a few sectors;
// neighbouring windows overlap and hit L1). Padding acts as -inf; NaN
// propagates as in torch. Kernel/stride/padding are the task's constructor
// arguments (not visible through the ABI); the output shape is checked.
#include <kopt/abi.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

constexpr int KS = 3, STRIDE = 2, PAD = 1;
// kopt:knob THREADS 256 64..1024*2 threads per block
constexpr int THREADS = 256;
// kopt:knob BLOCKS_PER_SM 32 {4,8,16,32,64} grid cap in blocks per SM: more blocks or longer grid-stride loops
constexpr int BLOCKS_PER_SM = 32;
// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024

__global__ void maxpool2d_kernel(const float* __restrict__ x, float* __restrict__ y,
                                 int64_t planes, int H, int W, int OH, int OW) {
  const int64_t total = planes * OH * OW;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += step) {
    const int ow = (int)(idx % OW);
    const int64_t t = idx / OW;
    const int oh = (int)(t % OH);
    const int64_t plane = t / OH;
    const float* xp = x + plane * H * W;
    const int h0 = oh * STRIDE - PAD, w0 = ow * STRIDE - PAD;
    float m = -INFINITY;
#pragma unroll
    for (int kh = 0; kh < KS; ++kh) {
      const int h = h0 + kh;
      if (h < 0 || h >= H) continue;
#pragma unroll
      for (int kw = 0; kw < KS; ++kw) {
        const int w = w0 + kw;
        if (w < 0 || w >= W) continue;
        const float v = __ldg(xp + (int64_t)h * W + w);
        if (v > m || v != v) m = v;
      }
    }
    y[idx] = m;
  }
}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const kopt_tensor& X = in[0];
  kopt_tensor& Y = out[0];
  if (X.dtype != KOPT_FLOAT32 || Y.dtype != KOPT_FLOAT32 || X.ndim != 4 || Y.ndim != 4) return 2;
  if (!kopt_is_contiguous(X) || !kopt_is_contiguous(Y)) return 3;
  const int64_t N = X.shape[0], C = X.shape[1], H = X.shape[2], W = X.shape[3];
  const int64_t OH = (H + 2 * PAD - KS) / STRIDE + 1, OW = (W + 2 * PAD - KS) / STRIDE + 1;
  if (Y.shape[0] != N || Y.shape[1] != C || Y.shape[2] != OH || Y.shape[3] != OW) return 4;
  const int64_t total = N * C * OH * OW;
  if (total == 0) return 0;

  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int threads = THREADS;
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks > (int64_t)sms * BLOCKS_PER_SM) blocks = (int64_t)sms * BLOCKS_PER_SM;
  maxpool2d_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(
      static_cast<const float*>(X.data), static_cast<float*>(Y.data), N * C, (int)H, (int)W,
      (int)OH, (int)OW);
  return (int)cudaGetLastError();
}
