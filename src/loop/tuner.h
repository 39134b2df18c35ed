// The Tuner: the one owner of the loop. For each task it captures the
// reference, asks the search which node to expand, asks the proposer for a
// child, records it, builds it on the CPU pool while the GPU measures earlier
// ones, verifies and times it through the Runner, and reports the outcome to
// the search, the run store and every callback; at the end it re-times the
// finalists together and names a winner. `kopt optimize`, `eval`, `bench`
// and `profile` are thin commands over it.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "build/builder.h"
#include "core/budget.h"
#include "core/json.h"
#include "core/task.h"
#include "loop/node_profiler.h"
#include "loop/objective.h"
#include "propose/proposer.h"
#include "run/runner.h"
#include "search/search_policy.h"
#include "store/run_store.h"
#include "task/contract.h"

namespace kopt {

/// One workload of a run.
struct LoopTask {
  Task task;
  Contract contract;
  std::optional<Candidate> from;  ///< a user's kernel to start from (--from)
};

struct LoopOptions {
  std::string proposer = "tune";
  ProposerOptions proposer_options;
  std::string search = "mcts";
  SearchOptions search_options;
  Objective objective = Objective::kTime;
  double speed_fraction = 0.03;  ///< energy-at-speed: within this fraction of the best time
  /// The whole run's budget; each task gets an equal share of what is left
  /// when it starts.
  BudgetLimits budget;
  /// Candidates proposed and compiling ahead of the GPU.
  int pipeline = 4;
  /// Verification and timing of every candidate (its contract is the task's).
  EvalOptions eval;
  /// Time eager and torch.compile at capture (the baselines speedups rest on).
  bool baselines = true;
  bool compile_baseline = true;
  /// Measure the reference itself as the root when the proposer has no root
  /// candidate (otherwise the root is the clean process's eager time).
  bool measure_reference_root = false;
  /// The best measured candidates re-timed together at the end (0: none),
  /// each with this timing budget.
  int finalists = 3;
  double finalist_max_seconds = 1.0;
  /// When nodes are profiled and diagnosed (needs a profiler: SetProfiler).
  ProfileMode profile = ProfileMode::kAuto;
  /// Profiles per task during the search (kBest); the winner's is extra.
  int profile_limit = 3;
  std::string arch = "sm_90";
  /// The best candidate of each task is written here as it is found
  /// (<out>/<task>/best.cu|py and best.json); empty: nowhere.
  std::filesystem::path out;
  /// Where the loop writes files it needs (the reference as a candidate).
  std::filesystem::path scratch;
  Json argv = Json::array();
  std::uint64_t seed = 1;
};

/// The options a run was started with, as the store keeps them (resume
/// reads them back).
Json ToJson(const LoopOptions& o);
LoopOptions LoopOptionsFromJson(const Json& j);

/// After every measurement (and after the root's).
struct NodeEvent {
  int task_index = 0;
  const LoopTask* task = nullptr;
  const TaskBundle* bundle = nullptr;
  int node = 0;
  const Proposal* proposal = nullptr;
  const EvalRecord* record = nullptr;  ///< null for a root taken from the baselines
  std::optional<double> objective;     ///< what the search ranked it by
  bool new_best = false;
  int best_node = 0;
};

/// The state of one task, for progress bars and plain progress lines.
struct TaskProgress {
  int task_index = 0;
  int task_count = 0;
  std::string task;
  std::string
      stage;  ///< "capturing", "measuring the root", "searching", "re-timing finalists", "done"
  int proposed = 0;
  int built = 0;
  int evaluated = 0;
  int measured = 0;
  int failed = 0;
  int in_flight = 0;
  std::optional<double> best_vs_eager;
  std::optional<double> best_vs_compile;
  std::string best_name;
  double budget_fraction = 0;  ///< of the whole run's budget
  std::string message;         ///< one line, e.g. the last outcome
};

struct TaskResult {
  int index = 0;
  std::string name;
  TaskStatus status = TaskStatus::kPending;
  std::string error;  ///< why it failed, one sentence
  std::optional<TaskBundle> bundle;
  int best_node = -1;
  std::optional<Proposal> best_proposal;
  std::optional<EvalRecord> best;  ///< the winner's evaluation (re-timed when finalists ran)
  int nodes = 0;
  int measured = 0;
  int failed = 0;
  int abandoned = 0;  ///< proposed but not measured when the budget ran out
  std::vector<std::string> notes;
  Json finalists =
      Json::array();  ///< {node, name, time_ms, energy_mj, speedup_vs_eager} re-timed together
  /// Nothing verified beat eager PyTorch (store_rules::KeepsReference): the
  /// reference stays, and the best candidate is only reported.
  bool reference_kept = false;
  int profiled = 0;                       ///< nodes profiled and diagnosed
  std::vector<Diagnosis> best_diagnoses;  ///< the winner's, when it was profiled
  /// Wall seconds of this process's phases of the task (0 for a task that
  /// had ended before a --resume): capture with its baselines; the search
  /// (the root, the plan, every candidate); finishing (the finalists
  /// re-timed, the winner profiled).
  double capture_s = 0;
  double search_s = 0;
  double finish_s = 0;
};

struct LoopResult {
  std::string run_id;
  RunStatus status = RunStatus::kRunning;
  std::string note;
  BudgetSpent spent;
  BudgetLimits limits;
  std::vector<TaskResult> tasks;
  double wall_s = 0;
  double gpu_busy_s = 0;  ///< seconds the Runner was verifying or timing, or the profiler profiling
  double profile_s = 0;   ///< of which profiling
};

/// The auto profile mode spends GPU time only where a diagnosis can lead
/// somewhere: a candidate at this fraction of its floor or closer is at its
/// roof (ncu would report the roof), and a profile during the search needs
/// twice its cost left in the task's share. kAutoProfileCostS is the cost
/// assumed before the run has profiled anything (the zoo's profiles took
/// 12-45 s on the H200).
inline constexpr double kAutoProfileNearFloor = 0.8;
inline constexpr double kAutoProfileCostS = 20;
/// Why the auto mode skips profiling a measured node (nullopt: profile it).
/// `searching`: a new best during the search (else the task's winner);
/// `share_left_s`: wall seconds left of the task's share; `mean_profile_s`:
/// the run's mean profile cost so far (0: none yet).
std::optional<std::string> SkipAutoProfile(const Measured& m, const TaskBundle& bundle,
                                           bool searching, double share_left_s,
                                           double mean_profile_s);

class Tuner {
 public:
  /// The store records everything; pass a memory store when nothing should
  /// persist. Candidates are compiled ahead through runner->Prebuild.
  Tuner(Runner* runner, RunStore* store, LoopOptions options);

  /// Called after each measurement, in order.
  std::vector<std::function<void(const NodeEvent&)>> on_measurement;
  /// Called whenever a task's progress changes.
  std::function<void(const TaskProgress&)> on_progress;
  /// One-line notes for the user (proposer notes, abandoned work).
  std::function<void(const std::string&)> on_log;

  /// Makes each task's proposer instead of MakeProposer(options.proposer)
  /// when set (tests; programs that embed kopt with a proposer of their own).
  std::function<std::unique_ptr<Proposer>()> make_proposer;

  /// The profile stage (null: none; LoopOptions::profile says when).
  void SetProfiler(NodeProfiler* profiler) { profiler_ = profiler; }

  /// A new run over `tasks`.
  LoopResult Run(const std::vector<LoopTask>& tasks);
  /// Continues a run of the store: nothing it finished is measured again;
  /// what was in flight when it stopped is measured first. A task whose
  /// share of the budget was spent keeps its result, unless a non-empty
  /// `budget` replaces the run's limits (then it searches on). Refuses a
  /// device other than the one the run was measured on. `run_id` may be an
  /// id, a unique prefix of one, or "last" (the store's newest run).
  LoopResult Resume(const std::string& run_id,
                    const std::optional<BudgetLimits>& budget = std::nullopt);

  /// Asks the loop to stop after the measurement in progress (a signal
  /// handler may call it).
  void RequestStop() { stop_.store(true); }

 private:
  struct TaskState;
  LoopResult Execute(const std::string& run_id, const std::vector<LoopTask>& tasks, Budget* budget,
                     bool resume);
  TaskResult RunTask(const std::string& run_id, int index, int count, const LoopTask& task,
                     Budget* budget, bool resume);
  void Log(const std::string& line);

  Runner* runner_;
  RunStore* store_;
  NodeProfiler* profiler_ = nullptr;
  bool profiler_broken_ = false;  ///< it failed in a way the next node would repeat
  LoopOptions options_;
  /// Resumed with new limits: tasks that spent their share search again.
  bool search_spent_tasks_ = false;
  std::atomic<bool> stop_{false};
  double gpu_busy_s_ = 0;
  double profile_s_ = 0;
  int profiles_run_ = 0;  ///< profiles started (their mean cost guides the auto mode)
  /// What the tasks run so far cost outside their searches (capture and
  /// baselines before, finalists and the winner's profile after): the shares
  /// of the tasks after them set it aside.
  struct FixedCosts {
    int tasks = 0;
    double capture_s = 0;
    double finish_s = 0;
    void Add(double capture, double finish) {
      ++tasks;
      capture_s += capture;
      finish_s += finish;
    }
    double per_task_s() const { return tasks > 0 ? (capture_s + finish_s) / tasks : 0; }
  };
  FixedCosts fixed_costs_;
};

/// Candidates each task's search evaluates whatever is left of the run's
/// time (never beyond a counted limit: candidates, tokens, cost).
inline constexpr int kMinCandidatesPerTask = 1;

}  // namespace kopt
