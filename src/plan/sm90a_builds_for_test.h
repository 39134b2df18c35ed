// For the plan layer's tests: compiles candidate sources with the real nvcc
// for sm_90a (the generated kernels' and the templates' target), cached
// under a scratch folder named `label`.
#pragma once

#include <string>
#include <vector>

#include "build/builder.h"
#include "testing/paths.h"

namespace kopt::testing {

inline std::vector<BuildResult> BuildForSm90a(const std::string& label,
                                              const std::vector<BuildRequest>& requests) {
  BuilderOptions options;
  options.cache_dir = ScratchDir(label);
  options.include_dir = SourceDir() / "include";
  options.arch = "sm_90a";
  options.jobs = 2;
  return MakeNvccBuilder(options)->BuildAll(requests);
}

}  // namespace kopt::testing
