/* Host-memory stand-ins for kernels, built with the C compiler so the
 * exported ModelNew's whole forward path (argument structs in ABI order,
 * 0-d scalars, parameters, outputs, kopt_init) runs on a machine without a
 * GPU. Each checks the layout it receives and returns a distinct code when
 * it is wrong. Build with -DHOST_SCALARS (t_scalars.py) or -DHOST_LINEAR
 * (t_linear.py). */
#include <stdbool.h>
#include <stdint.h>

#include "kopt/abi.h"

static int g_init_calls = 0;
int init_calls(void) { return g_init_calls; }

#if defined(HOST_SCALARS)
/* in: x (M, N) float32, alpha float64, shift int64, negate bool; out: (M, N) float32 */
int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  if (n_in != 4 || n_out != 1) return 10;
  if (in[0].dtype != KOPT_FLOAT32 || in[0].ndim != 2) return 11;
  if (in[1].dtype != KOPT_FLOAT64 || in[1].ndim != 0) return 12;
  if (in[2].dtype != KOPT_INT64 || in[2].ndim != 0) return 13;
  if (in[3].dtype != KOPT_BOOL || in[3].ndim != 0) return 14;
  if (out[0].dtype != KOPT_FLOAT32 || out[0].ndim != 2 || out[0].shape[0] != in[0].shape[0] ||
      out[0].shape[1] != in[0].shape[1] || out[0].strides[1] != 1)
    return 15;
  const double alpha = *(const double*)in[1].data;
  const int64_t shift = *(const int64_t*)in[2].data;
  const bool negate = *(const bool*)in[3].data;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < in[0].shape[0]; ++i)
    for (int64_t j = 0; j < in[0].shape[1]; ++j) {
      float v = (float)(x[i * in[0].strides[0] + j * in[0].strides[1]] * (float)alpha + (float)shift);
      y[i * out[0].strides[0] + j] = negate ? -v : v;
    }
  return 0;
}
#elif defined(HOST_LINEAR)
/* in: x (M, K), weight (N, K), bias (N), all float32; out: relu(x W^T + b) * 0.5, (M, N).
 * kopt_init keeps a copy of the bias, as a kernel pre-transforming weights would. */
static float g_bias[4096];
static int64_t g_n = -1;

int kopt_init(const kopt_tensor* in, int n_in, kopt_stream stream) {
  if (n_in != 3 || in[2].ndim != 1 || in[2].shape[0] > 4096) return 20;
  g_n = in[2].shape[0];
  for (int64_t j = 0; j < g_n; ++j) g_bias[j] = ((const float*)in[2].data)[j];
  ++g_init_calls;
  return 0;
}

int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream stream) {
  if (n_in != 3 || n_out != 1) return 21;
  const kopt_tensor *X = &in[0], *W = &in[1], *B = &in[2];
  if (X->ndim != 2 || W->ndim != 2 || B->ndim != 1 || W->shape[1] != X->shape[1] || B->shape[0] != W->shape[0])
    return 22;  /* parameters out of order, or not there */
  if (g_n != W->shape[0]) return 23;  /* kopt_init did not run */
  const int64_t M = X->shape[0], K = X->shape[1], N = W->shape[0];
  if (out[0].ndim != 2 || out[0].shape[0] != M || out[0].shape[1] != N) return 24;
  const float *x = (const float*)X->data, *w = (const float*)W->data;
  float* y = (float*)out[0].data;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = g_bias[j];
      for (int64_t k = 0; k < K; ++k) acc += x[i * X->strides[0] + k * X->strides[1]] * w[j * W->strides[0] + k];
      y[i * N + j] = (acc > 0 ? acc : 0) * 0.5f;
    }
  return 0;
}
#endif
