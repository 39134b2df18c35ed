// --store for the commands that read the run store (runs, show, report).
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "store/run_store.h"

namespace kopt {

/// Adds `--store PATH` (default: DefaultRunStorePath()).
void AddStoreOption(CLI::App* app, std::string* path);

struct OpenedRunStore {
  std::unique_ptr<RunStore> store;
  std::string label;  ///< the path, as messages and reports name it
};

/// Opens the store at `path` (empty: the default) to read it. Throws
/// kopt::Error, one sentence, when there is no file there (a reader never
/// creates one) or it is not a run store.
OpenedRunStore OpenRunStoreForReading(const std::string& path);

/// True when there is a file at `path` (empty: the default) to read.
bool RunStoreExists(const std::string& path);

}  // namespace kopt
