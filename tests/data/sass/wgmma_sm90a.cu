// One Hopper warpgroup MMA (wgmma, sm_90a): HGMMA in SASS. Compile-only: the
// descriptors are not meant to be run. Commands: README.md.
#include <cuda_fp16.h>
#include <cstdint>
extern "C" __global__ void wgmma_tile(const __half* __restrict__ a_g, const __half* __restrict__ b_g, float* __restrict__ c) {
  __shared__ alignas(128) __half a[64 * 16];
  __shared__ alignas(128) __half b[16 * 8];
  for (int i = threadIdx.x; i < 64 * 16; i += blockDim.x) a[i] = a_g[i];
  for (int i = threadIdx.x; i < 16 * 8; i += blockDim.x) b[i] = b_g[i];
  __syncthreads();
  auto desc = [](const void* p) -> uint64_t {
    uint64_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    return ((addr & 0x3FFFF) >> 4) | (uint64_t(8) << 16) | (uint64_t(64) << 32);
  };
  uint64_t da = desc(a), db = desc(b);
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile("wgmma.fence.sync.aligned;\n");
  asm volatile(
      "{\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
      "{%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "l"(da), "l"(db));
  asm volatile("wgmma.commit_group.sync.aligned;\n");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  int t = threadIdx.x;
  c[t * 4 + 0] = d0; c[t * 4 + 1] = d1; c[t * 4 + 2] = d2; c[t * 4 + 3] = d3;
}
