// Options every subcommand shares, and the objects they build from them.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "build/builder.h"
#include "run/evaluator.h"
#include "run/worker_channel.h"

namespace kopt {

struct CommonOptions {
  std::string device = "cuda:0";
  std::string cache_dir;  ///< empty: DefaultCacheDir()
  std::string arch;       ///< empty: from the GPU, else sm_90
  std::string python;
  bool refresh = false;
  bool verbose = false;
  bool sandbox = true;  ///< run candidates in the OS sandbox (--no-sandbox turns it off)
};

/// Adds --device, --cache, --arch, --python, --refresh, --no-sandbox, -v to
/// a subcommand. --device and --python are checked as they are parsed.
void AddCommonOptions(CLI::App* app, CommonOptions* options);

/// Option checks whose failure is one sentence and exit status 2.
/// A finite number above zero (seconds, budgets).
CLI::Validator PositiveNumber();
/// A valid ECMAScript regular expression (--filter).
CLI::Validator ValidRegex();

/// The Python the worker runs: --python, else $KOPT_PYTHON, else python3.
std::string PythonFor(const CommonOptions& options);

/// Adds the contract's overrides (--contract, --precision,
/// --forbid-torch-ops, --allow-torch-ops, --second-shape) to a subcommand.
void AddContractOptions(CLI::App* app, ContractOverrides* overrides);

/// The builder, worker and evaluator for one command invocation.
struct Context {
  std::filesystem::path repo_root;
  std::filesystem::path cache_dir;
  std::string arch;
  std::unique_ptr<Builder> builder;
  std::unique_ptr<Builder> worker_builder;  ///< the same recipe, into the worker's load_cuda cache
  std::unique_ptr<WorkerChannel> worker;    ///< runs candidates (sandboxed unless --no-sandbox)
  std::unique_ptr<WorkerChannel>
      clean_worker;  ///< never loads a candidate: capture, baselines, reference facts
  std::unique_ptr<Evaluator> evaluator;
};

Context MakeContext(const CommonOptions& options);

/// The run store `kopt optimize` writes and runs/show/report/export read:
/// --store when given, else $KOPT_RUNS, else <cache>/runs.db.
std::filesystem::path RunStorePath(const CommonOptions& options, const std::string& store_flag);

/// True when the command targets a CUDA device but none is visible.
bool WantsGpuButNoneVisible(const CommonOptions& options);

/// The command line kopt was started with (main() records it; runs store it).
void SetCommandLine(int argc, char** argv);
const std::vector<std::string>& CommandLine();

/// Progress lines go to stderr, so stdout stays clean for tables and JSON.
void PrintProgress(const std::string& line);

}  // namespace kopt
