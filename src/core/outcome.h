// The result of evaluating one candidate: failures are values, not exceptions.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/json.h"
#include "core/stats.h"

namespace kopt {

/// The compiler rejected the candidate.
struct BuildFailed {
  std::string log;
};

/// The candidate ran but its outputs (or its behaviour) are wrong.
struct Incorrect {
  std::vector<std::string> reasons;  ///< plain English, most important first
};

/// The candidate crashed the worker, raised, returned an error code, or ran
/// out of memory. `kind` is the worker's error kind (cuda_error, oom, ...).
struct Crashed {
  std::string kind;
  std::string message;
};

/// The candidate did not finish within the deadline of `phase`.
struct TimedOut {
  std::string phase;
  double after_s = 0;
};

/// Correct and timed. Times in milliseconds per call.
struct Measured {
  SampleSummary time_ms;   ///< CUDA events around the call (ranking time)
  SampleSummary host_ms;   ///< host clock with device-wide synchronize
  std::optional<SampleSummary> eager_ms;    ///< reference, interleaved with the candidate
  std::optional<SampleSummary> compile_ms;  ///< torch.compile, same session
  /// The same baselines timed in a clean process (no candidate code ever
  /// ran there). Speedups use the faster of the two, so a candidate that
  /// slows the reference beside it gains nothing.
  std::optional<SampleSummary> clean_eager_ms;
  std::optional<SampleSummary> clean_compile_ms;
  std::optional<double> energy_mj_per_call;
  std::optional<double> eager_energy_mj_per_call;
  std::vector<std::string> warnings;  ///< suspicious but not disqualifying
  std::vector<std::string> notes;     ///< what was checked beyond the usual, in words
  /// The eager time speedups rest on: the faster of the interleaved and the
  /// clean process's medians.
  std::optional<double> EagerMs() const {
    if (!eager_ms && !clean_eager_ms) return std::nullopt;
    if (!eager_ms) return clean_eager_ms->median;
    if (!clean_eager_ms) return eager_ms->median;
    return std::min(eager_ms->median, clean_eager_ms->median);
  }
  std::optional<double> CompileMs() const {
    if (!compile_ms && !clean_compile_ms) return std::nullopt;
    if (!compile_ms) return clean_compile_ms->median;
    if (!clean_compile_ms) return compile_ms->median;
    return std::min(compile_ms->median, clean_compile_ms->median);
  }
  std::optional<double> SpeedupVsEager() const {
    auto e = EagerMs();
    if (!e || time_ms.median <= 0) return std::nullopt;
    return *e / time_ms.median;
  }
  std::optional<double> SpeedupVsCompile() const {
    auto c = CompileMs();
    if (!c || time_ms.median <= 0) return std::nullopt;
    return *c / time_ms.median;
  }
};

using Outcome = std::variant<BuildFailed, Incorrect, Crashed, TimedOut, Measured>;

/// "build_failed", "incorrect", "crashed", "timed_out" or "measured".
std::string OutcomeName(const Outcome& outcome);
/// One line for terminals: the verdict and its main reason.
std::string OutcomeLine(const Outcome& outcome);

/// The line of a build log that says why it failed: the compiler's first
/// line naming an error, else kopt's own last "kopt:" line, else the first.
std::string BuildFailureReason(const std::string& log);
Json ToJson(const Outcome& outcome);
/// The inverse of ToJson (a record read back from a file or the run store);
/// an unreadable record is Crashed{"internal", ...}.
Outcome OutcomeFromJson(const Json& j);

}  // namespace kopt
