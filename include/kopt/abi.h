/* kopt candidate ABI: the C interface every compiled candidate exports.
 *
 * A `cuda` candidate is one .cu file compiled into a shared object that
 * exports `kopt_forward` (required) and `kopt_init` (optional).
 *
 * Inputs, in order: the forward() arguments that are tensors, then the
 * module's parameters, then its buffers (named_parameters() then
 * named_buffers() order of the reference Model). Non-tensor forward arguments
 * are passed as 0-d tensors (int64 for ints, float64 for floats, bool).
 * Outputs are allocated by the caller with the reference's shapes, dtypes and
 * contiguous strides, and poisoned before the call: every element must be
 * written. All work must be enqueued on `stream`; nothing may be left running
 * on other streams when the function returns to the caller's stream order.
 *
 * Return 0 on success, any other value on failure (the evaluation then ends
 * as Crashed with that code).
 */
#ifndef KOPT_ABI_H_
#define KOPT_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KOPT_ABI_VERSION 1
#define KOPT_MAX_DIMS 8

typedef enum kopt_dtype {
  KOPT_FLOAT32 = 0,
  KOPT_FLOAT16 = 1,
  KOPT_BFLOAT16 = 2,
  KOPT_FLOAT64 = 3,
  KOPT_INT32 = 4,
  KOPT_INT64 = 5,
  KOPT_BOOL = 6,
  KOPT_UINT8 = 7,
  KOPT_INT8 = 8,
  KOPT_INT16 = 9,
} kopt_dtype;

typedef struct kopt_tensor {
  void* data;                      /* device pointer */
  int32_t dtype;                   /* a kopt_dtype */
  int32_t ndim;                    /* 0 .. KOPT_MAX_DIMS */
  int64_t shape[KOPT_MAX_DIMS];    /* elements per dimension */
  int64_t strides[KOPT_MAX_DIMS];  /* in elements, not bytes */
} kopt_tensor;

/* The stream type is spelled as an opaque pointer so this header compiles
 * without the CUDA headers; it is ABI-identical to cudaStream_t. */
typedef struct CUstream_st* kopt_stream;

/* Required. Computes the forward pass. */
int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                 kopt_stream stream);

/* Optional. Called once before the first kopt_forward with the same inputs
 * layout, so a candidate may pre-transform parameters into its own state. */
int kopt_init(const kopt_tensor* in, int n_in, kopt_stream stream);

#ifdef __cplusplus
}

/* Small helpers for candidates written in CUDA C++. */
static inline int64_t kopt_numel(const kopt_tensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}
static inline bool kopt_is_contiguous(const kopt_tensor& t) {
  int64_t expect = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expect) return false;
    expect *= t.shape[i];
  }
  return true;
}
#endif

#endif /* KOPT_ABI_H_ */
