// One optimization run as the reports see it: read once from the run store
// and turned into typed values (outcomes parsed, diagnoses read, speedups,
// the best candidate and the best-so-far series worked out), so the HTML
// page, `kopt show` and their JSON all say the same thing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/budget.h"
#include "core/diagnosis.h"
#include "core/json.h"
#include "core/outcome.h"
#include "store/run_store.h"
#include "task/device.h"

namespace kopt {

struct NodeView {
  NodeRecord record;
  /// "pending" (no outcome yet), or the outcome's verdict: measured,
  /// incorrect, build_failed, crashed, timed_out.
  std::string verdict = "pending";
  std::optional<Outcome> outcome;
  std::optional<double> time_ms;     ///< median per call (measured)
  std::optional<double> vs_eager;    ///< speedup over eager PyTorch
  std::optional<double> vs_compile;  ///< speedup over torch.compile
  std::optional<double> energy_mj;   ///< per call
  std::optional<double> objective;   ///< what the search ranked (lower is better)
  double gpu_s = 0;                  ///< GPU time its evaluation took
  std::string finished_at;
  std::optional<double> seconds;  ///< from the run's start to its verdict
  int order = -1;                 ///< 0-based position among the evaluated nodes; -1: not evaluated
  /// The main reason in one line: a failure's first reason, a crash's kind
  /// and message, a build's first error, a measured node's first warning.
  std::string reason;
  bool profiled = false;
  std::vector<Diagnosis> diagnoses;  ///< largest estimated gain first
  std::vector<int> children;         ///< ids, ascending
};

/// One point of the best-so-far series: after `evaluated` verdicts.
struct ProgressPoint {
  int evaluated = 0;  ///< candidates evaluated so far, this one included
  int node = 0;
  std::optional<double> seconds;   ///< since the run started
  std::optional<double> vs_eager;  ///< this node's speedups (measured only)
  std::optional<double> vs_compile;
  std::optional<double> best_vs_eager;  ///< the best so far
  std::optional<double> best_vs_compile;
  bool improved = false;  ///< this node raised best_vs_eager or best_vs_compile
};

struct TaskView {
  TaskRecord record;
  std::vector<NodeView> nodes;  ///< ascending id
  std::optional<int> root;      ///< node 0, else the first node without a parent
  /// The loop's best node (TaskRecord.best_node), else the measured node
  /// with the lowest objective (then time).
  std::optional<int> best;
  std::map<std::string, int> verdicts;  ///< nodes by verdict ("pending" included)
  std::vector<ProgressPoint> progress;  ///< in the order verdicts arrived
  int evaluated = 0;
  double gpu_s = 0;  ///< summed over its outcomes

  const NodeView* Find(int id) const;
  /// The finalists' re-timing (TaskRecord::finalists) in words: "#4
  /// name 0.2775 ms, 0.91x vs eager (winner); #0 ..."; empty when the task
  /// had none.
  std::string FinalistsLine() const;
  /// Ids from the root down to `id` (root first); empty when `id` is unknown.
  std::vector<int> PathTo(int id) const;
};

/// What RunRecord.options holds, typed.
struct RunOptionsView {
  std::string proposer;
  std::string search;
  std::string objective;
  std::optional<long long> seed;
  std::optional<BudgetLimits> budget;
  std::vector<std::string> argv;
  /// Any other option, as "key", "value as JSON text".
  std::vector<std::pair<std::string, std::string>> other;
};

struct RunView {
  RunRecord run;
  RunOptionsView options;
  std::optional<DeviceInfo> device;
  std::vector<TaskView> tasks;
};

/// The run with this id or unique id prefix; nullopt when none matches.
/// Throws kopt::Error (from the store) when the prefix fits several runs.
std::optional<RunView> LoadRunView(const RunStore& store, const std::string& id_or_prefix);

/// A verdict as a reader says it: "correct", "build failed", "not yet
/// evaluated".
std::string VerdictWords(const std::string& verdict);

/// LoadRunView, or kopt::Error, one sentence naming `store_label`, when no
/// run matches.
RunView RequireRunView(const RunStore& store, const std::string& id_or_prefix,
                       const std::string& store_label);

/// Seconds from `from` to `to`, both as the store writes them
/// ("2026-12-03T08:12:05.123Z"); nullopt when either is not such a time.
std::optional<double> SecondsBetween(const std::string& from, const std::string& to);

/// "2026-12-03 08:12 UTC" from a stored time; the input itself when unreadable.
std::string ShortTime(const std::string& iso);

/// The view as JSON (for `kopt show --json`): the run, its options, and per
/// task the counts, the best node with its path, and every node without its
/// source.
Json ToJson(const RunView& view);

}  // namespace kopt
