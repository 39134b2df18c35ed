#include "core/gpu.h"

#include <dlfcn.h>

namespace kopt {

namespace {

void* Driver() {
  static void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return nullptr;
  using InitFn = int (*)(unsigned);
  static bool ok = [] {
    auto init = reinterpret_cast<InitFn>(::dlsym(lib, "cuInit"));
    return init && init(0) == 0;
  }();
  return ok ? lib : nullptr;
}

}  // namespace

bool HaveCudaDevice() {
  void* lib = Driver();
  if (!lib) return false;
  using CountFn = int (*)(int*);
  auto count = reinterpret_cast<CountFn>(::dlsym(lib, "cuDeviceGetCount"));
  int n = 0;
  return count && count(&n) == 0 && n > 0;
}

int CudaComputeCapability(int ordinal) {
  void* lib = Driver();
  if (!lib) return 0;
  using GetFn = int (*)(int*, int);
  using AttrFn = int (*)(int*, int, int);
  auto get = reinterpret_cast<GetFn>(::dlsym(lib, "cuDeviceGet"));
  auto attr = reinterpret_cast<AttrFn>(::dlsym(lib, "cuDeviceGetAttribute"));
  int dev = 0, major = 0, minor = 0;
  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76.
  if (!get || !attr || get(&dev, ordinal) != 0 || attr(&major, 75, dev) != 0 ||
      attr(&minor, 76, dev) != 0)
    return 0;
  return major * 10 + minor;
}

std::string NativeArch(int cc) {
  if (cc == 90) return "sm_90a";
  return cc > 0 ? "sm_" + std::to_string(cc) : "sm_90";
}

}  // namespace kopt
