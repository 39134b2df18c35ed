// The Budget one optimization run may spend, shared by the loop, the search
// policy and the proposers: wall time, GPU time, candidates, LLM tokens and
// cost. Thread-safe: the compile pool and the GPU stage both charge it.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "core/json.h"

namespace kopt {

/// What a run may spend; 0 means "no limit" on that dimension.
struct BudgetLimits {
  double wall_s = 0;
  double gpu_s = 0;
  long long candidates = 0;
  long long llm_tokens = 0;
  double llm_cost_usd = 0;
  bool Unlimited() const;
};

/// What a run has spent so far.
struct BudgetSpent {
  double wall_s = 0;
  double gpu_s = 0;
  long long candidates = 0;
  long long llm_tokens = 0;
  double llm_cost_usd = 0;
};

/// Parses a budget: comma-separated `KEY=VALUE` items with keys wall, gpu,
/// candidates, tokens, cost; a bare duration ("10m", "90s", "1h30m") is wall
/// time and a bare integer ("40") is a number of candidates. Throws
/// kopt::Error, one sentence, on anything else or a negative value.
BudgetLimits ParseBudget(const std::string& text);

/// The budget of a run given none: 10 minutes of wall time, or
/// kDefaultWallPerTaskS per task when that is more. A task's fixed costs
/// (capture with the eager and torch.compile baselines, the finalists)
/// took ~8 s on an H200 for level-1-style tasks and more for whole
/// networks, so a flat 10 minutes left nothing to search in a 51-task run
/// (bench/results, sessions 13-15); 20 s a task leaves each ~10 s, about 7
/// candidates.
inline constexpr double kDefaultWallS = 600;
inline constexpr double kDefaultWallPerTaskS = 20;
BudgetLimits DefaultBudget(std::size_t tasks);

/// "wall 10 min, 40 candidates" (for tables and reports).
std::string DescribeLimits(const BudgetLimits& limits);
std::string DescribeSpent(const BudgetSpent& spent);

Json ToJson(const BudgetLimits& l);
Json ToJson(const BudgetSpent& s);
BudgetLimits BudgetLimitsFromJson(const Json& j);
BudgetSpent BudgetSpentFromJson(const Json& j);

class Budget {
 public:
  /// `now_s` is the clock in seconds (steady); tests pass a fake.
  explicit Budget(BudgetLimits limits, std::function<double()> now_s = {});

  /// Continues a run that already spent `spent` (kopt optimize --resume):
  /// the wall clock resumes from spent.wall_s.
  void Restore(const BudgetSpent& spent);

  void AddGpuSeconds(double s);
  void AddCandidate();
  void AddLlm(long long tokens, double cost_usd);

  /// True once any limited dimension is spent.
  bool Exhausted() const;
  /// True once a counted limit is spent: candidates, LLM tokens or cost
  /// (limits a run never overruns; time limits may be, by finishing work and
  /// by each task's first candidate).
  bool CountsExhausted() const;
  /// Which limit ran out, in words ("wall time (10 min) spent"); "" if none.
  std::string ExhaustedReason() const;
  /// The largest fraction spent over the limited dimensions (0 when
  /// unlimited), for progress bars and the policy's exploration schedule.
  double FractionSpent() const;

  BudgetSpent Spent() const;
  const BudgetLimits& limits() const { return limits_; }

 private:
  double WallLocked() const;

  BudgetLimits limits_;
  std::function<double()> now_s_;
  mutable std::mutex mu_;
  double start_s_ = 0;
  BudgetSpent spent_;  ///< everything but wall_s, which the clock gives
  double wall_before_ = 0;
};

}  // namespace kopt
