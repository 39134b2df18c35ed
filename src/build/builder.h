// Turning candidate sources into loadable shared objects (the Builder seam).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"

namespace kopt {

struct BuildRequest {
  std::string source;                    ///< the whole .cu text
  std::string name;                      ///< for logs and build.json only; not hashed
  std::vector<std::string> extra_flags;  ///< appended to the nvcc command line; hashed
};

/// What ptxas reported for one kernel (entry function) on one architecture.
struct KernelResources {
  std::string kernel;     ///< mangled name as ptxas prints it
  std::string demangled;  ///< C++ name, or `kernel` when it is not mangled
  int registers = 0;
  long smem_bytes = 0;  ///< static shared memory (dynamic shared memory is not known at build time)
  long cmem_bytes = 0;  ///< sum of the cmem[N] banks on the kernel's "Used" line
  long stack_bytes = 0;  ///< stack frame
  long spill_store_bytes = 0;
  long spill_load_bytes = 0;
  std::string arch;  ///< e.g. "sm_90", from "Compiling entry function ... for 'sm_90'"
};

struct BuildResult {
  bool ok = false;
  std::string hash;               ///< cache key (set even when the build failed)
  std::filesystem::path so_path;  ///< <cache_dir>/<hash>/candidate.so; empty unless ok
  std::string log;                ///< nvcc stdout then stderr, plus "kopt:" lines of our own
  bool cache_hit = false;
  double compile_s = 0;  ///< wall seconds nvcc ran (on a cache hit: the original compile's)
  std::vector<KernelResources> resources;
  std::string arch;  ///< the builder's arch, e.g. "sm_90"
};

class Builder {
 public:
  virtual ~Builder() = default;
  /// Compiles one source (or finds it in the cache). A source that does not
  /// compile, or a compile that times out, is `ok=false` with the reason in
  /// `log`; only infrastructure failures (unwritable cache) throw kopt::Error.
  virtual BuildResult Build(const BuildRequest& request) = 0;
  /// Compiles in parallel on the pool, results in request order.
  virtual std::vector<BuildResult> BuildAll(const std::vector<BuildRequest>& requests) = 0;
};

/// The arch of a build that runs on the CPU: the host's C++ compiler against
/// include/kopt/host_cuda.h (src/build/host_emulation.h), for verification
/// where no GPU is; such a build's timings mean nothing.
inline constexpr char kHostArch[] = "host";

struct BuilderOptions {
  std::filesystem::path cache_dir;    ///< required; created when missing
  std::filesystem::path include_dir;  ///< folder holding kopt/abi.h; empty: no -I
  std::string nvcc;            ///< empty: $KOPT_NVCC, then PATH, then /usr/local/cuda/bin/nvcc
  std::string arch = "sm_90";  ///< sm_NN or sm_NNa (e.g. sm_90a for wgmma/TMA), or kHostArch
  int jobs = 0;                ///< parallel compiles; 0: hardware threads
  double timeout_s = 120;      ///< per compile; 0: none
};

/// The nvcc flags a builder made with `options` compiles `request` with, in
/// order, without the output and input files (`-o candidate.so candidate.cu`
/// follow them): the one definition of kopt's compile recipe, also written
/// into exported files (src/report/export.h). Adds `-I<include_dir>` only when
/// `options.include_dir` is set, as given. Throws kopt::Error for a bad arch.
std::vector<std::string> NvccFlags(const BuilderOptions& options, const BuildRequest& request);

/// An nvcc-backed builder with a content-addressed cache and a fixed pool of
/// `jobs` worker threads. Runs `nvcc --version` once; throws kopt::Error when
/// nvcc cannot be found or run, or the options are invalid.
std::unique_ptr<Builder> MakeNvccBuilder(const BuilderOptions& options);

Json ToJson(const BuildResult& result);
Json ToJson(const KernelResources& resources);
BuildResult BuildResultFromJson(const Json& j);
KernelResources KernelResourcesFromJson(const Json& j);

}  // namespace kopt
