/* Scratch device memory for a candidate's own temporaries (split partials,
 * look-back flags): one buffer per device, grown when a call needs more and
 * never freed, so a captured CUDA graph that still refers to an earlier
 * buffer stays valid. One stream at a time: two calls on two streams at once
 * would share it.
 *
 * Not cudaMallocAsync/cudaFreeAsync per call: with the default pool's release
 * threshold of 0 the pool gives its memory back at every synchronization, and
 * the next call maps it again. On the H200 that cost ~50 us of host time per
 * call beside a 0.17 ms kernel, which the verifier rejects as work outside
 * the timed stream.
 */
#ifndef KOPT_SCRATCH_H_
#define KOPT_SCRATCH_H_

#include <cuda_runtime.h>
#include <stddef.h>

/* A device buffer of at least `bytes` on the current device, or nullptr when
 * it could not be allocated. Its contents are whatever the last call left. */
static inline void* kopt_scratch(size_t bytes) {
  static void* buf[64] = {};
  static size_t cap[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return nullptr;
  if (cap[dev] < bytes) {
    void* p = nullptr;
    const size_t want = bytes < 2 * cap[dev] ? 2 * cap[dev] : bytes;
    if (cudaMalloc(&p, want) != cudaSuccess) return nullptr;
    buf[dev] = p;
    cap[dev] = want;
  }
  return buf[dev];
}

#endif  // KOPT_SCRATCH_H_
