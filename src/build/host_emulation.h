// A CUDA candidate compiled for the CPU (`--arch host`): the source rewrite
// that lets g++ compile it against include/kopt/host_cuda.h, so the CPU
// worker can verify a kernel's results where no GPU is.
#pragma once
#include <string>
#include <vector>

namespace kopt {

struct HostSource {
  bool ok = false;
  std::string source;   ///< the rewritten source (when ok)
  std::string why_not;  ///< one sentence: what the host cannot run (when not ok)
};

/// The .cu with every `kernel<<<grid, block[, smem[, stream]]>>>(args)`
/// launch turned into a kopt_host::launch call and every `extern __shared__`
/// array pointed at the launch's dynamic shared memory. Not ok for inline
/// PTX and for headers the host has no stand-in for (cuBLAS, cuDNN,
/// CUTLASS, fp8, cooperative groups, the driver API); bfloat16 and half
/// are storage and conversions only.
HostSource HostEmulationSource(const std::string& cu);

/// The compiler flags of a host build (the compiler is $CXX, else c++),
/// without the output and input files; `include_dir` holds kopt/abi.h.
std::vector<std::string> HostFlags(const std::string& include_dir);

}  // namespace kopt
