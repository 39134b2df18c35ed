#include "cli/run_store_option.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/paths.h"

namespace kopt {
namespace {

std::filesystem::path Resolve(const std::string& path) {
  return path.empty() ? DefaultRunStorePath() : std::filesystem::path(path);
}

}  // namespace

void AddStoreOption(CLI::App* app, std::string* path) {
  app->add_option("--store", *path,
                  "The run store to read (default: $KOPT_RUNS, else runs.db in the cache folder: " +
                      DefaultRunStorePath().string() + ")");
}

bool RunStoreExists(const std::string& path) {
  return std::filesystem::is_regular_file(Resolve(path));
}

OpenedRunStore OpenRunStoreForReading(const std::string& path) {
  const std::filesystem::path p = Resolve(path);
  if (!std::filesystem::is_regular_file(p))
    throw Error(
        fmt::format("There is no run store at {}: kopt optimize creates it, or pass --store FILE.",
                    p.string()));
  return {MakeSqliteRunStore(p), p.string()};
}

}  // namespace kopt
