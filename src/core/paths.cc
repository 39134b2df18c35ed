#include "core/paths.h"

#include <cstdlib>

namespace kopt {

namespace fs = std::filesystem;

namespace {

const char* Env(const char* name) {
  const char* p = std::getenv(name);
  return p && *p ? p : nullptr;
}

}  // namespace

fs::path DefaultCacheDir() {
  if (const char* p = Env("KOPT_CACHE")) return p;
  if (const char* p = Env("XDG_CACHE_HOME")) return fs::path(p) / "kopt";
  if (const char* p = Env("HOME")) return fs::path(p) / ".cache" / "kopt";
  return fs::temp_directory_path() / "kopt-cache";
}

fs::path DefaultRunStorePath(const fs::path& cache_dir) {
  if (const char* p = Env("KOPT_RUNS")) return p;
  return (cache_dir.empty() ? DefaultCacheDir() : cache_dir) / "runs.db";
}

fs::path DefaultMemoryPath(const fs::path& cache_dir) {
  if (const char* p = Env("KOPT_MEMORY")) return p;
  return (cache_dir.empty() ? DefaultCacheDir() : cache_dir) / "memory.db";
}

fs::path BuildCacheDir(const fs::path& cache_dir) { return cache_dir / "builds"; }

fs::path WorkerCacheDir(const fs::path& cache_dir) { return cache_dir / "so"; }

}  // namespace kopt
