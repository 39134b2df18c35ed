// Where kopt keeps its run store when no --store is given.
#pragma once

#include <filesystem>

namespace kopt {

/// `$KOPT_RUNS` when set, else `runs.db` in kopt's cache folder: `$KOPT_CACHE`,
/// else `$XDG_CACHE_HOME/kopt`, else `~/.cache/kopt` (the same folder as
/// src/run's DefaultCacheDir, which store/ cannot call: run/ is to its right).
std::filesystem::path DefaultRunStorePath();

}  // namespace kopt
