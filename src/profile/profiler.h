// The Profiler seam: runs a candidate under Nsight Compute or the PyTorch
// profiler (through python -m kopt.profile_run) and returns what came back.
#pragma once

#include <filesystem>
#include <memory>
#include <cstddef>
#include <string>
#include <vector>

#include "core/json.h"
#include "profile/ncu_csv.h"

namespace kopt {

/// One candidate on one task, as the profile runner loads it.
struct ProfileTarget {
  std::filesystem::path task;       ///< KernelBench-format .py
  std::string kind;                 ///< "cuda" or "hybrid"
  std::filesystem::path candidate;  ///< the built .so (cuda) or the ModelNew .py (hybrid)
  std::string device = "cuda:0";
  std::string python = "python3";
  std::filesystem::path repo_root;  ///< python/ and include/ come from here
  std::filesystem::path cache_dir;  ///< kopt's cache (hybrids' load_cuda builds land in <cache>/so/builds)
  std::string arch;                 ///< nvcc target for hybrids' load_cuda; empty: the GPU's
  int calls = 1;                    ///< calls profiled
  int max_launches = 0;             ///< ncu profiles at most this many launches per call (0: all)
  int warmup = 3;                   ///< calls before profiling starts
  double timeout_s = 900;
};

/// An ncu tier: the launches it saw, with the metrics asked for.
struct NcuRun {
  bool ok = false;
  NcuReport report;
  std::string csv;                    ///< ncu's CSV as printed
  std::vector<std::string> metrics;   ///< asked for
  std::vector<std::string> loaded_so; ///< shared objects a hybrid loaded through kopt.load_cuda
  std::string error;                  ///< one sentence when !ok
  double seconds = 0;                 ///< wall time of the whole ncu run
};

/// The system tier: kernels, gaps, copies and host time per call.
struct TimelineRun {
  bool ok = false;
  Json timeline;       ///< kopt.profile_run's JSON (see python/kopt/profile_run.py)
  std::string error;
  double seconds = 0;
};

class Profiler {
 public:
  virtual ~Profiler() = default;
  /// Profiles `target.calls` calls after the warm-up with `metrics`.
  virtual NcuRun Ncu(const ProfileTarget& target, const std::vector<std::string>& metrics) = 0;
  virtual TimelineRun Timeline(const ProfileTarget& target) = 0;
  /// Source-level counters of one kernel (the champion's): ncu's
  /// SourceCounters and WarpStateStats sections for the first launch whose
  /// name matches `kernel`, printed as the source page (SASS, one row per
  /// instruction, CSV) in `csv`. Not every profiler has it.
  virtual NcuRun Source(const ProfileTarget& target, const std::string& kernel) {
    (void)target;
    (void)kernel;
    NcuRun r;
    r.error = "this profiler collects no source-level counters";
    return r;
  }
};

/// One SASS instruction of the source page, with its counters.
struct SourceLine {
  std::string address;
  std::string source;        ///< the instruction as ncu prints it
  double stall_samples = 0;  ///< warp-state samples at this PC (all reasons)
  double executed = 0;       ///< warp-level instructions executed
  /// The reason holding most of this PC's samples, in StallReasons()' names
  /// ("drain", "long_scoreboard"), and its samples; empty when the page has
  /// no per-reason columns.
  std::string top_reason;
  double top_reason_samples = 0;
};

/// The instructions that hold most of the stall samples.
struct SourceHotspots {
  double total_samples = 0;
  std::vector<SourceLine> top;  ///< largest first
  std::string stall_column;     ///< the column the samples came from
  std::string error;            ///< when no source table was found
};

/// Reads `ncu --page source --csv --print-source sass`: finds the header row
/// (an "Address" and a "Source" column), takes the stall samples from the
/// first column named like "Warp Stall Sampling (All Samples)" (else any
/// "Stall Sampling" column) and executions from "Instructions Executed",
/// the dominant reason from the per-reason `stall_*` columns (ncu 2025's
/// short names, mapped onto StallReasons()); keeps the `top` rows by samples.
/// A stall-heavy PC executed zero times is usually the `BRA` after `EXIT`,
/// where finished warps wait for their stores to drain.
SourceHotspots ParseSourcePage(const std::string& csv, size_t top = 10);

/// $KOPT_NCU, then ncu on PATH, then /usr/local/cuda/bin/ncu; empty when none.
std::string FindNcu();

/// The real thing: `ncu --clock-control none --profile-from-start off --csv
/// --page raw --metrics ... python -m kopt.profile_run --mode ncu ...` and
/// `python -m kopt.profile_run --mode timeline`. `ncu` empty: FindNcu().
/// Never throws for a failing run: the failure is the run's `error`.
std::unique_ptr<Profiler> MakeProcessProfiler(std::string ncu = "");

/// The JSON line kopt.profile_run prints last ("KOPT_PROFILE_JSON {...}");
/// null when absent or malformed.
Json ProfileRunJson(const std::string& stdout_text);

}  // namespace kopt
