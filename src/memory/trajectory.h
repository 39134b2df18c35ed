// Short-term memory: the task's trajectory in this run — what was tried,
// what failed and why — summarized into each prompt and used by the search so
// no idea is retried blindly.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/json.h"

namespace kopt {

struct TrajectoryStep {
  int node = 0;
  int parent = 0;
  std::string move;  ///< in words
  std::string proposer;
  std::string outcome;    ///< "measured", "build_failed", "incorrect", "crashed", "timed_out"
  std::string reason;     ///< one line: the compiler's first error, the verifier's reason
  double speedup = 0;     ///< vs eager when measured, else 0
  std::string diagnosis;  ///< the top diagnosis on it, if profiled
};

/// A move's text compared as the same idea: lowercase, runs of whitespace as
/// one space, no leading or trailing space or final period.
std::string NormalizeMove(const std::string& move);

class Trajectory {
 public:
  void Add(TrajectoryStep step);
  const std::vector<TrajectoryStep>& steps() const { return steps_; }
  /// True when a move with the same normalized text was already made from
  /// `parent` (or anywhere, when parent < 0).
  bool Tried(const std::string& move, int parent = -1) const;
  /// A plain-text summary for a prompt, at most `max_chars` bytes: a count,
  /// the best so far, then failures grouped by outcome and reason (largest
  /// group first), then the other measured moves, newest first. Whole lines
  /// only: what does not fit is dropped and a "... (N more)" line says so.
  std::string Summary(std::size_t max_chars) const;
  Json ToJson() const;

 private:
  std::vector<TrajectoryStep> steps_;
};

}  // namespace kopt
