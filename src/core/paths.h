// Where kopt keeps what it writes when no flag says otherwise: one home for
// the folders and the environment variables that move them.
#pragma once

#include <filesystem>

namespace kopt {

/// kopt's cache folder: `$KOPT_CACHE`, else `$XDG_CACHE_HOME/kopt`, else
/// `~/.cache/kopt`, else a folder under the system's temporary directory.
std::filesystem::path DefaultCacheDir();

/// The run store: `$KOPT_RUNS` when set, else `runs.db` in `cache_dir`
/// (empty: DefaultCacheDir()).
std::filesystem::path DefaultRunStorePath(const std::filesystem::path& cache_dir = {});

/// The knowledge base (long-term memory): `$KOPT_MEMORY` when set, else
/// `memory.db` in `cache_dir` (empty: DefaultCacheDir()).
std::filesystem::path DefaultMemoryPath(const std::filesystem::path& cache_dir = {});

/// Where the nvcc builder keeps its content-hashed builds under a cache.
std::filesystem::path BuildCacheDir(const std::filesystem::path& cache_dir);

/// The cache a candidate worker is given as its `$KOPT_CACHE` (writable in
/// its sandbox): `kopt.load_cuda`'s builds land in its `builds/` folder.
std::filesystem::path WorkerCacheDir(const std::filesystem::path& cache_dir);

}  // namespace kopt
