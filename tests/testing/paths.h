// Where tests find the source tree, scratch folders and the GPU.
#pragma once

#include <filesystem>
#include <string>

namespace kopt::testing {

/// The repository root (compiled in; KOPT_ROOT overrides).
std::filesystem::path SourceDir();
/// A fresh empty folder under the system temp dir, unique per call.
std::filesystem::path ScratchDir(const std::string& label);
/// True when a CUDA driver reports at least one device.
bool HaveGpu();
/// True when nvcc can be found (PATH or /usr/local/cuda/bin).
bool HaveNvcc();

}  // namespace kopt::testing

/// Skips the current GPU test cleanly ("skipped", never "passed").
#define KOPT_REQUIRE_GPU()                                           \
  do {                                                               \
    if (!::kopt::testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU"; \
  } while (0)
