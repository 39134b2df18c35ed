#include "store/run_store_path.h"

#include <cstdlib>

namespace kopt {

namespace fs = std::filesystem;

fs::path DefaultRunStorePath() {
  if (const char* p = std::getenv("KOPT_RUNS"); p && *p) return p;
  fs::path cache;
  if (const char* p = std::getenv("KOPT_CACHE"); p && *p) {
    cache = p;
  } else if (const char* p = std::getenv("XDG_CACHE_HOME"); p && *p) {
    cache = fs::path(p) / "kopt";
  } else if (const char* p = std::getenv("HOME"); p && *p) {
    cache = fs::path(p) / ".cache" / "kopt";
  } else {
    cache = fs::temp_directory_path() / "kopt-cache";
  }
  return cache / "runs.db";
}

}  // namespace kopt
