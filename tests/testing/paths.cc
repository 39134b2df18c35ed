#include "testing/paths.h"

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <unistd.h>

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

bool HaveGpu() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(::dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(::dlsym(lib, "cuDeviceGetCount"));
  int n = 0;
  bool ok = init && count && init(0) == 0 && count(&n) == 0 && n > 0;
  return ok;
}

bool HaveNvcc() {
  return !FindOnPath("nvcc").empty() || ::access("/usr/local/cuda/bin/nvcc", X_OK) == 0;
}

}  // namespace kopt::testing
