// The RunStore seam: every run, task, candidate (search-tree node), outcome
// and profile of `kopt optimize`, durable, so `--resume` continues a run that
// was killed at any point (kill -9 included) and loses nothing it finished.
//
// Two implementations with the same behaviour: SQLite (WAL) for real runs and
// an in-memory twin for unit tests of the loop. Both are thread-safe (every
// call holds one mutex; the loop calls from one thread, so it costs nothing).
//
// Failures as values, as elsewhere: a duplicate node or outcome is refused
// with a value and changes nothing. Calls that name a run, task or node that
// does not exist are bugs in the caller and throw std::invalid_argument.
// Only the infrastructure failing (unwritable file, full disk, corrupt file,
// a database from a newer kopt, a lock held too long) throws kopt::Error,
// one sentence that says what to do.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/budget.h"
#include "core/diagnosis.h"
#include "core/json.h"
#include "core/outcome.h"
#include "task/bundle.h"
#include "task/contract.h"

namespace kopt {

enum class RunStatus {
  kRunning,      ///< in progress, or killed without a chance to say so
  kFinished,     ///< the search ended on its own
  kBudgetSpent,  ///< stopped by the budget
  kInterrupted,  ///< stopped by the user (Ctrl-C); resumable
  kFailed,       ///< stopped by an infrastructure failure (see the note)
};

enum class TaskStatus {
  kPending,  ///< not started yet
  kRunning,
  kFinished,
  kBudgetSpent,
  kFailed,
};

enum class NodeKind {
  kCuda,       ///< one .cu through the C ABI
  kHybrid,     ///< a KernelBench-style ModelNew Python file
  kReference,  ///< the task's own reference (a root without a source of ours)
};

/// Lower-case names as stored: "running", "budget_spent", "cuda", ...
const char* RunStatusName(RunStatus s);
const char* TaskStatusName(TaskStatus s);
const char* NodeKindName(NodeKind k);
std::optional<RunStatus> RunStatusFromName(std::string_view name);
std::optional<TaskStatus> TaskStatusFromName(std::string_view name);
std::optional<NodeKind> NodeKindFromName(std::string_view name);

/// What `kopt optimize` knows when it starts a run.
struct NewRun {
  /// proposer, search, objective, seed, budget limits, the command line.
  Json options = Json::object();
  Json device = Json::object();
  std::string kopt_version;
  std::string note;  ///< one line
};

struct RunRecord {
  std::string id;          ///< e.g. "20261203-0812-3fa2" (UTC start, then 4 random hex digits)
  std::string created_at;  ///< UTC ISO-8601 with milliseconds, "2026-12-03T08:12:05.123Z"
  std::string updated_at;  ///< last write to the run or any of its records
  RunStatus status = RunStatus::kRunning;
  Json options = Json::object();
  Json device = Json::object();
  std::string kopt_version;
  BudgetSpent spent;  ///< as of the last recorded outcome (or SetRunSpent)
  std::string note;   ///< one line: why it stopped, what it is for
};

struct TaskRecord {
  std::string run_id;
  int index = 0;  ///< position in the run, from 0
  std::string name;
  std::string path;
  std::string task_hash;  ///< content hash of the task file
  TaskBundle bundle;
  Contract contract;
  TaskStatus status = TaskStatus::kPending;
  std::optional<int> best_node;  ///< the node the loop considers best so far
  /// The finalists re-timed together in one worker process at the task's
  /// end (loop/tuner.cc): per finalist {node, name, time_ms, ci_low, ci_high,
  /// winner, speedup_vs_eager?, speedup_vs_compile?, energy_mj?}. Empty when
  /// the task ended without that step.
  Json finalists = Json::array();
};

/// A candidate: one node of a task's search tree.
struct NodeRecord {
  std::string run_id;
  int task_index = 0;
  int id = 0;                 ///< the search tree's node id (0: the root)
  std::optional<int> parent;  ///< none for the root
  int depth = 0;
  std::string move;      ///< what made it from its parent, in words
  std::string proposer;  ///< which proposer made it
  std::string expected;  ///< what the move should change, in words
  NodeKind kind = NodeKind::kCuda;
  std::string name;
  std::string source;            ///< the whole source text ("" for the reference)
  std::string source_hash;       ///< unique per (run, task): search memory
  Json detail = Json::object();  ///< the proposer's own record (knob values, prompt, ...)
  std::string created_at;        ///< set by the store
};

/// The verdict on one node; at most one per node.
struct OutcomeRecord {
  std::string run_id;
  int task_index = 0;
  int node = 0;
  std::string verdict;  ///< OutcomeName(): build_failed, incorrect, crashed, timed_out, measured
  Json outcome = Json::object();     ///< ToJson(Outcome)
  Json evaluation = Json::object();  ///< the full evaluation record (every timing sample)
  std::optional<double> objective;   ///< lower is better; what the search ranked
  std::optional<double> time_ms;     ///< median per call
  std::optional<double> energy_mj;   ///< per call
  std::optional<double> speedup;     ///< vs eager PyTorch, same session
  double gpu_s = 0;                  ///< GPU time the evaluation took (charged to the budget)
  std::string finished_at;           ///< set by the store
};

/// An OutcomeRecord for `outcome`, with verdict, outcome JSON, time_ms,
/// energy_mj and speedup filled from it; the caller adds the evaluation
/// record, the objective and gpu_s.
OutcomeRecord MakeOutcomeRecord(const std::string& run_id, int task_index, int node,
                                const Outcome& outcome);

struct ProfileRecord {
  std::string run_id;
  int task_index = 0;
  int node = 0;
  Json profile = Json::object();     ///< metrics, static profile, timeline
  std::vector<Diagnosis> diagnoses;  ///< the analysis tools' findings
  std::string created_at;            ///< set by the store
};

/// One line of `kopt runs` per task.
struct TaskSummary {
  int index = 0;
  std::string name;
  TaskStatus status = TaskStatus::kPending;
  int nodes = 0;
  int outcomes = 0;
  /// The winner's speedup from the finalists' re-timing where the task has
  /// one, else the largest among its measured nodes.
  std::optional<double> best_speedup;
};

struct RunSummary {
  RunRecord run;
  std::vector<TaskSummary> tasks;
};

enum class AddNodeResult {
  kAdded,
  kDuplicateId,      ///< the (run, task) already has a node with this id; nothing written
  kDuplicateSource,  ///< ... or one with this source hash; nothing written
};

class RunStore {
 public:
  virtual ~RunStore() = default;

  // Runs.

  /// Starts a run (status running, nothing spent) with a new unique id.
  virtual RunRecord CreateRun(const NewRun& run) = 0;
  /// The run with exactly this id.
  virtual std::optional<RunRecord> GetRun(const std::string& id) const = 0;
  /// The run with this id, or else the one run whose id starts with it
  /// (case-insensitive); nullopt when none does. Throws kopt::Error naming
  /// the candidates when the prefix fits several.
  virtual std::optional<RunRecord> FindRun(const std::string& id_or_prefix) const = 0;
  /// Newest first (by created_at, then creation order); `limit` <= 0: all.
  virtual std::vector<RunSummary> ListRuns(int limit) const = 0;
  /// Sets the status and the one-line note (which replaces the old one).
  virtual void SetRunStatus(const std::string& run_id, RunStatus status,
                            const std::string& note) = 0;
  /// Records what the run has spent outside an outcome (LLM tokens, wall time).
  virtual void SetRunSpent(const std::string& run_id, const BudgetSpent& spent) = 0;

  // Tasks of a run.

  /// False, writing nothing, when the run already has a task at task.index.
  /// task.best_node must be empty (a new task has no nodes; see SetTaskBest).
  virtual bool AddTask(const TaskRecord& task) = 0;
  /// In index order.
  virtual std::vector<TaskRecord> ListTasks(const std::string& run_id) const = 0;
  virtual std::optional<TaskRecord> GetTask(const std::string& run_id, int index) const = 0;
  virtual void SetTaskStatus(const std::string& run_id, int index, TaskStatus status) = 0;
  /// `node` must be a node of that task.
  virtual void SetTaskBest(const std::string& run_id, int index, int node) = 0;
  /// Records the finalists' re-timing (TaskRecord::finalists; a JSON array).
  virtual void SetTaskFinalists(const std::string& run_id, int index, const Json& finalists) = 0;

  // Nodes.

  /// Records a candidate before it is measured. Its parent, if any, must be
  /// recorded already. Duplicates (id, or source hash within the run's task)
  /// are refused as values.
  virtual AddNodeResult AddNode(const NodeRecord& node) = 0;
  /// In id order.
  virtual std::vector<NodeRecord> ListNodes(const std::string& run_id, int task_index) const = 0;
  /// Nodes recorded but never given an outcome, in id order: what was in
  /// flight when a run died. --resume measures exactly these again.
  virtual std::vector<NodeRecord> NodesWithoutOutcome(const std::string& run_id,
                                                      int task_index) const = 0;

  // Outcomes.

  /// Records a node's outcome and the run's spent budget after it in one
  /// transaction, so after a crash the spent budget always matches the
  /// recorded outcomes. False, writing nothing (not the budget either), when
  /// the node already has an outcome.
  virtual bool RecordOutcome(const OutcomeRecord& outcome, const BudgetSpent& run_spent) = 0;
  virtual std::optional<OutcomeRecord> GetOutcome(const std::string& run_id, int task_index,
                                                  int node) const = 0;
  virtual bool HasOutcome(const std::string& run_id, int task_index, int node) const = 0;
  /// In node order.
  virtual std::vector<OutcomeRecord> ListOutcomes(const std::string& run_id,
                                                  int task_index) const = 0;

  // Profiles.

  /// Records a node's profile, replacing an earlier one (a deeper tier).
  virtual void PutProfile(const ProfileRecord& profile) = 0;
  virtual std::optional<ProfileRecord> GetProfile(const std::string& run_id, int task_index,
                                                  int node) const = 0;
  /// In node order.
  virtual std::vector<ProfileRecord> ListProfiles(const std::string& run_id,
                                                  int task_index) const = 0;
};

/// The wall clock the store stamps records with; tests pass a fake.
using WallClock = std::function<std::chrono::system_clock::time_point()>;

/// Opens (creating the folder and file when missing) the SQLite run store at
/// `path`. Several processes may open the same file: readers never wait
/// (`kopt runs` during `kopt optimize`), writers take turns, each waiting up
/// to 10 s. Throws kopt::Error, one sentence, when the file cannot be created
/// or written, is not a kopt run store, is corrupt, or was written by a newer
/// kopt. A store must not be used across fork(): open it in the process that
/// uses it.
std::unique_ptr<RunStore> MakeSqliteRunStore(const std::filesystem::path& path, WallClock now = {});

/// A store in memory with the SQLite store's behaviour, for tests.
std::unique_ptr<RunStore> MakeMemoryRunStore(WallClock now = {});

}  // namespace kopt
