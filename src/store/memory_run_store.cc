// The in-memory RunStore: plain maps, the SQLite store's rules (store_rules.h).
#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "store/run_store.h"
#include "store/store_rules.h"

namespace kopt {
namespace {

namespace rules = store_rules;

struct TaskData {
  TaskRecord record;
  std::map<int, NodeRecord> nodes;
  std::set<std::string> source_hashes;
  std::map<int, OutcomeRecord> outcomes;
  std::map<int, ProfileRecord> profiles;
};

struct RunData {
  RunRecord record;
  long long seq = 0;  ///< creation order (SQLite's rowid)
  std::map<int, TaskData> tasks;
};

class MemoryRunStore : public RunStore {
 public:
  explicit MemoryRunStore(WallClock now)
      : now_(rules::ClockOr(std::move(now))), rng_(rules::SeededRng()) {}

  RunRecord CreateRun(const NewRun& run) override {
    std::lock_guard lock(mu_);
    auto t = now_();
    RunRecord r;
    for (int attempt = 0; attempt < rules::kRunIdAttempts; ++attempt) {
      std::string id = rules::NewRunId(t, rng_);
      if (!runs_.count(id)) {
        r.id = id;
        break;
      }
    }
    if (r.id.empty()) rules::ThrowNoFreeRunId();
    r.created_at = r.updated_at = rules::IsoUtc(t);
    r.options = rules::AsStored(run.options);
    r.device = rules::AsStored(run.device);
    r.kopt_version = run.kopt_version;
    r.note = run.note;
    runs_[r.id] = RunData{r, next_seq_++, {}};
    return r;
  }

  std::optional<RunRecord> GetRun(const std::string& id) const override {
    std::lock_guard lock(mu_);
    auto it = runs_.find(id);
    if (it == runs_.end()) return std::nullopt;
    return it->second.record;
  }

  std::optional<RunRecord> FindRun(const std::string& id_or_prefix) const override {
    std::lock_guard lock(mu_);
    std::string prefix = rules::NormalizePrefix(id_or_prefix);
    if (prefix.empty()) return std::nullopt;
    if (auto it = runs_.find(prefix); it != runs_.end()) return it->second.record;
    std::vector<std::string> matches;
    for (auto it = runs_.lower_bound(prefix);
         it != runs_.end() && it->first.compare(0, prefix.size(), prefix) == 0 &&
         matches.size() < 6;
         ++it)
      matches.push_back(it->first);
    if (matches.empty()) return std::nullopt;
    if (matches.size() > 1) rules::ThrowAmbiguousPrefix(id_or_prefix, matches);
    return runs_.at(matches[0]).record;
  }

  std::vector<RunSummary> ListRuns(int limit) const override {
    std::lock_guard lock(mu_);
    std::vector<const RunData*> order;
    for (const auto& [id, run] : runs_) order.push_back(&run);
    std::sort(order.begin(), order.end(), [](const RunData* a, const RunData* b) {
      if (a->record.created_at != b->record.created_at)
        return a->record.created_at > b->record.created_at;
      return a->seq > b->seq;
    });
    if (limit > 0 && order.size() > static_cast<size_t>(limit)) order.resize(limit);
    std::vector<RunSummary> out;
    for (const RunData* run : order) {
      RunSummary s{run->record, {}};
      for (const auto& [index, task] : run->tasks) {
        TaskSummary t;
        t.index = index;
        t.name = task.record.name;
        t.status = task.record.status;
        t.nodes = static_cast<int>(task.nodes.size());
        t.outcomes = static_cast<int>(task.outcomes.size());
        for (const auto& [node, o] : task.outcomes) {
          if (o.verdict == "measured" && o.speedup &&
              (!t.best_speedup || *o.speedup > *t.best_speedup))
            t.best_speedup = o.speedup;
        }
        if (auto w = rules::FinalistWinnerSpeedup(task.record.finalists)) t.best_speedup = w;
        s.tasks.push_back(std::move(t));
      }
      out.push_back(std::move(s));
    }
    return out;
  }

  void SetRunStatus(const std::string& run_id, RunStatus status, const std::string& note) override {
    std::lock_guard lock(mu_);
    RunData& run = Run(run_id);
    run.record.status = status;
    run.record.note = note;
    run.record.updated_at = Now();
  }

  void SetRunSpent(const std::string& run_id, const BudgetSpent& spent) override {
    std::lock_guard lock(mu_);
    rules::CheckSpent(spent);
    RunData& run = Run(run_id);
    run.record.spent = spent;
    run.record.updated_at = Now();
  }

  bool AddTask(const TaskRecord& task) override {
    std::lock_guard lock(mu_);
    RunData& run = Run(task.run_id);
    if (run.tasks.count(task.index)) return false;
    TaskRecord r = task;
    r.bundle = rules::BundleFromStored(rules::AsStored(rules::BundleToStored(task.bundle)));
    r.contract = rules::ContractFromStored(rules::AsStored(rules::ContractToStored(task.contract)));
    if (r.best_node) rules::ThrowBadCall("a new task has no nodes, so no best node");
    run.tasks[task.index].record = std::move(r);
    run.record.updated_at = Now();
    return true;
  }

  std::vector<TaskRecord> ListTasks(const std::string& run_id) const override {
    std::lock_guard lock(mu_);
    std::vector<TaskRecord> out;
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return out;
    for (const auto& [index, task] : it->second.tasks) out.push_back(task.record);
    return out;
  }

  std::optional<TaskRecord> GetTask(const std::string& run_id, int index) const override {
    std::lock_guard lock(mu_);
    const TaskData* task = FindTask(run_id, index);
    if (!task) return std::nullopt;
    return task->record;
  }

  void SetTaskStatus(const std::string& run_id, int index, TaskStatus status) override {
    std::lock_guard lock(mu_);
    Task(run_id, index).record.status = status;
    Run(run_id).record.updated_at = Now();
  }

  void SetTaskBest(const std::string& run_id, int index, int node) override {
    std::lock_guard lock(mu_);
    TaskData& task = Task(run_id, index);
    if (!task.nodes.count(node)) rules::ThrowBadCall("the best node must be a node of the task");
    task.record.best_node = node;
    Run(run_id).record.updated_at = Now();
  }

  void SetTaskFinalists(const std::string& run_id, int index, const Json& finalists) override {
    std::lock_guard lock(mu_);
    if (!finalists.is_array()) rules::ThrowBadCall("the finalists must be a JSON array");
    TaskData& task = Task(run_id, index);
    task.record.finalists = finalists;
    Run(run_id).record.updated_at = Now();
  }

  AddNodeResult AddNode(const NodeRecord& node) override {
    std::lock_guard lock(mu_);
    TaskData& task = Task(node.run_id, node.task_index);
    if (task.nodes.count(node.id)) return AddNodeResult::kDuplicateId;
    if (task.source_hashes.count(node.source_hash)) return AddNodeResult::kDuplicateSource;
    if (node.parent && !task.nodes.count(*node.parent))
      rules::ThrowBadCall("a node's parent must be recorded before it");
    NodeRecord r = node;
    r.detail = rules::AsStored(node.detail);
    r.created_at = Now();
    Run(node.run_id).record.updated_at = r.created_at;
    task.nodes[node.id] = std::move(r);
    task.source_hashes.insert(node.source_hash);
    return AddNodeResult::kAdded;
  }

  std::vector<NodeRecord> ListNodes(const std::string& run_id, int task_index) const override {
    std::lock_guard lock(mu_);
    std::vector<NodeRecord> out;
    if (const TaskData* task = FindTask(run_id, task_index))
      for (const auto& [id, n] : task->nodes) out.push_back(n);
    return out;
  }

  std::vector<NodeRecord> NodesWithoutOutcome(const std::string& run_id,
                                              int task_index) const override {
    std::lock_guard lock(mu_);
    std::vector<NodeRecord> out;
    if (const TaskData* task = FindTask(run_id, task_index))
      for (const auto& [id, n] : task->nodes)
        if (!task->outcomes.count(id)) out.push_back(n);
    return out;
  }

  bool RecordOutcome(const OutcomeRecord& outcome, const BudgetSpent& run_spent) override {
    std::lock_guard lock(mu_);
    rules::CheckOutcome(outcome);
    rules::CheckSpent(run_spent);
    TaskData& task = Task(outcome.run_id, outcome.task_index);
    if (!task.nodes.count(outcome.node))
      rules::ThrowBadCall("an outcome's node must be recorded first");
    if (task.outcomes.count(outcome.node)) return false;
    OutcomeRecord r = outcome;
    r.outcome = rules::AsStored(outcome.outcome);
    r.evaluation = rules::AsStored(outcome.evaluation);
    r.objective = rules::FiniteOrNone(outcome.objective);
    r.time_ms = rules::FiniteOrNone(outcome.time_ms);
    r.energy_mj = rules::FiniteOrNone(outcome.energy_mj);
    r.speedup = rules::FiniteOrNone(outcome.speedup);
    r.finished_at = Now();
    RunData& run = Run(outcome.run_id);
    run.record.spent = run_spent;
    run.record.updated_at = r.finished_at;
    task.outcomes[outcome.node] = std::move(r);
    return true;
  }

  std::optional<OutcomeRecord> GetOutcome(const std::string& run_id, int task_index,
                                          int node) const override {
    std::lock_guard lock(mu_);
    const TaskData* task = FindTask(run_id, task_index);
    if (!task) return std::nullopt;
    auto it = task->outcomes.find(node);
    if (it == task->outcomes.end()) return std::nullopt;
    return it->second;
  }

  bool HasOutcome(const std::string& run_id, int task_index, int node) const override {
    std::lock_guard lock(mu_);
    const TaskData* task = FindTask(run_id, task_index);
    return task && task->outcomes.count(node);
  }

  std::vector<OutcomeRecord> ListOutcomes(const std::string& run_id,
                                          int task_index) const override {
    std::lock_guard lock(mu_);
    std::vector<OutcomeRecord> out;
    if (const TaskData* task = FindTask(run_id, task_index))
      for (const auto& [id, o] : task->outcomes) out.push_back(o);
    return out;
  }

  void PutProfile(const ProfileRecord& profile) override {
    std::lock_guard lock(mu_);
    TaskData& task = Task(profile.run_id, profile.task_index);
    if (!task.nodes.count(profile.node))
      rules::ThrowBadCall("a profile's node must be recorded first");
    ProfileRecord r = profile;
    r.profile = rules::AsStored(profile.profile);
    r.diagnoses = DiagnosesFromJson(rules::AsStored(ToJson(profile.diagnoses)));
    r.created_at = Now();
    Run(profile.run_id).record.updated_at = r.created_at;
    task.profiles[profile.node] = std::move(r);
  }

  std::optional<ProfileRecord> GetProfile(const std::string& run_id, int task_index,
                                          int node) const override {
    std::lock_guard lock(mu_);
    const TaskData* task = FindTask(run_id, task_index);
    if (!task) return std::nullopt;
    auto it = task->profiles.find(node);
    if (it == task->profiles.end()) return std::nullopt;
    return it->second;
  }

  std::vector<ProfileRecord> ListProfiles(const std::string& run_id,
                                          int task_index) const override {
    std::lock_guard lock(mu_);
    std::vector<ProfileRecord> out;
    if (const TaskData* task = FindTask(run_id, task_index))
      for (const auto& [id, p] : task->profiles) out.push_back(p);
    return out;
  }

 private:
  RunData& Run(const std::string& run_id) {
    auto it = runs_.find(run_id);
    if (it == runs_.end()) rules::ThrowBadCall("no run '" + run_id + "'");
    return it->second;
  }

  TaskData& Task(const std::string& run_id, int index) {
    RunData& run = Run(run_id);
    auto it = run.tasks.find(index);
    if (it == run.tasks.end())
      rules::ThrowBadCall("run '" + run_id + "' has no task " + std::to_string(index));
    return it->second;
  }

  const TaskData* FindTask(const std::string& run_id, int index) const {
    auto run = runs_.find(run_id);
    if (run == runs_.end()) return nullptr;
    auto task = run->second.tasks.find(index);
    return task == run->second.tasks.end() ? nullptr : &task->second;
  }

  /// Every write reads the clock once: its records and the run's updated_at share the time.
  std::string Now() const { return rules::IsoUtc(now_()); }

  WallClock now_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  std::map<std::string, RunData> runs_;
  long long next_seq_ = 0;
};

}  // namespace

std::unique_ptr<RunStore> MakeMemoryRunStore(WallClock now) {
  return std::make_unique<MemoryRunStore>(std::move(now));
}

}  // namespace kopt
