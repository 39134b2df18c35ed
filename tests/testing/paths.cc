#include "testing/paths.h"

#include <atomic>
#include <cstdlib>
#include <unistd.h>

#include "core/gpu.h"
#include "core/subprocess.h"

namespace kopt::testing {

std::filesystem::path SourceDir() {
  if (const char* root = std::getenv("KOPT_ROOT")) return root;
  return KOPT_SOURCE_DIR;
}

std::filesystem::path ScratchDir(const std::string& label) {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::temp_directory_path() /
             ("kopt-test-" + label + "-" + std::to_string(::getpid()) + "-" +
              std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

bool HaveGpu() { return HaveCudaDevice(); }

bool HaveNvcc() {
  return !FindOnPath("nvcc").empty() || ::access("/usr/local/cuda/bin/nvcc", X_OK) == 0;
}

}  // namespace kopt::testing
