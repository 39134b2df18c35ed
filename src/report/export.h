// Exporting a candidate as files a user drops into their code: the plain .cu
// with the ABI header, a self-contained KernelBench ModelNew file, a README.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "build/builder.h"
#include "core/json.h"
#include "core/task.h"
#include "task/bundle.h"

namespace kopt {

/// Everything an export needs, as plain values: `kopt export --task
/// --candidate` fills it from files, `kopt export RUN` from the run store.
struct ExportRequest {
  std::filesystem::path task_path;  ///< the KernelBench task file (named in the README)
  std::string task_source;          ///< its text; empty: read from task_path
  Candidate candidate;              ///< kind, source, name (path is not needed)
  std::string name;                 ///< file stem; empty: the candidate's name, else the task's
  std::vector<std::string> recipe;  ///< nvcc flags, from ExportRecipe
  std::string arch;                 ///< the arch the recipe targets, e.g. "sm_90"
  std::string abi_header;           ///< text of include/kopt/abi.h
  /// How the candidate was verified: a JSON object such as {"task", "run",
  /// "speedup_vs_eager", "speedup_vs_compile", "time_ms", "device"}; null
  /// when it was not (the README then says kopt export did not verify it).
  Json provenance;
  /// The ABI signature from the task's bundle (inputs in ABI order, then
  /// outputs), listed in the README when known; empty otherwise.
  std::vector<TensorSpec> inputs, outputs;
  std::filesystem::path out_dir;  ///< created when missing; files in it are replaced
};

struct ExportedFiles {
  std::filesystem::path cu;        ///< <name>.cu (cuda candidates only)
  std::filesystem::path header;    ///< kopt/abi.h beside it (cuda candidates only)
  std::filesystem::path modelnew;  ///< <name>_modelnew.py
  std::filesystem::path readme;    ///< README.md
  bool embedded_loader = false;    ///< a hybrid's `import kopt` now uses the embedded loader
};

/// The recipe an exported file compiles with: NvccFlags for this candidate and
/// builder, without the include folder (the exported file supplies its own).
std::vector<std::string> ExportRecipe(const BuilderOptions& options, const Candidate& candidate,
                                      const std::vector<std::string>& extra_flags = {});

/// Writes the files into request.out_dir (see docs/export.md for the layout).
/// Throws kopt::Error, one sentence, when the task is not a KernelBench task,
/// the candidate is not of its kind, a hybrid imports kopt in a way the export
/// cannot replace, or the folder cannot be written.
ExportedFiles ExportCandidate(const ExportRequest& request);

/// A hybrid candidate that is the task's own Model: the task's source, then
/// `class ModelNew(Model)` changing nothing (same constructor, so the same
/// parameters in the same order). What `kopt export RUN` writes for a task
/// whose winner did not beat eager (store_rules::KeepsReference).
std::string ReferenceModelNewSource(const std::string& task_source, const std::string& why);

/// `text` as a Python string literal that evaluates to exactly `text`: a raw
/// triple-quoted string when that is exact, an escaped one otherwise.
std::string PythonStringLiteral(const std::string& text);

}  // namespace kopt
