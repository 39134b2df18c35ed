// What is known about a built candidate without running it: ptxas resources and SASS mix.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "build/builder.h"
#include "core/json.h"
#include "profile/sass.h"

namespace kopt {

struct StaticKernel {
  std::string kernel;     ///< mangled name
  std::string demangled;
  std::string arch;
  std::optional<KernelResources> resources;  ///< from ptxas -v (BuildResult)
  std::optional<SassFunction> sass;          ///< from cuobjdump
};

struct StaticReport {
  std::vector<StaticKernel> kernels;  ///< ptxas order, then SASS-only functions
  std::string cuobjdump;              ///< the tool used; empty when none was found
  std::string sass_text;              ///< cuobjdump's output as printed (kept for replay)
  bool sass_available = false;
  std::vector<std::string> notes;     ///< plain English: what is missing and why
};

struct StaticProfileOptions {
  std::string cuobjdump;  ///< empty: FindCuobjdump()
  double timeout_s = 60;
};

/// $KOPT_CUOBJDUMP, then PATH, then /usr/local/cuda/bin/cuobjdump; empty when
/// none is there. (The `triton` pip package ships one under
/// site-packages/triton/backends/nvidia/bin/; point KOPT_CUOBJDUMP at it.)
std::string FindCuobjdump();

/// Joins ptxas resources and SASS functions by (name, arch). Pure.
StaticReport MergeStatic(const std::vector<KernelResources>& resources,
                         const std::vector<SassFunction>& sass);

/// Runs `cuobjdump --dump-sass` on the build's shared object and merges it
/// with the build's ptxas resources. Never throws for a missing or failing
/// cuobjdump: the report then holds the resources alone and says why in notes.
StaticReport StaticProfile(const BuildResult& build, const StaticProfileOptions& options = {});

/// The SASS of one kernel by mangled or demangled name; nullptr when absent.
const StaticKernel* FindStaticKernel(const StaticReport& report, const std::string& name);

Json ToJson(const StaticReport& report);

}  // namespace kopt
