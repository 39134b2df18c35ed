// The result of evaluating one candidate: failures are values, not exceptions.
#pragma once

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
  std::optional<SampleSummary> eager_ms;    ///< reference, same session
  std::optional<SampleSummary> compile_ms;  ///< torch.compile, same session
  std::optional<double> energy_mj_per_call;
  std::optional<double> eager_energy_mj_per_call;
  std::vector<std::string> warnings;  ///< suspicious but not disqualifying
  std::optional<double> SpeedupVsEager() const {
    if (!eager_ms || time_ms.median <= 0) return std::nullopt;
    return eager_ms->median / time_ms.median;
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

}  // namespace kopt
