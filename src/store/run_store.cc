#include "store/run_store.h"

#include <array>
#include <utility>

namespace kopt {
namespace {

template <class E, size_t N>
std::optional<E> FromName(const std::array<std::pair<E, const char*>, N>& table,
                          std::string_view name) {
  for (const auto& [value, n] : table)
    if (name == n) return value;
  return std::nullopt;
}

template <class E, size_t N>
const char* ToName(const std::array<std::pair<E, const char*>, N>& table, E value) {
  for (const auto& [v, n] : table)
    if (v == value) return n;
  return "unknown";
}

constexpr std::array<std::pair<RunStatus, const char*>, 5> kRunStatusNames{{
    {RunStatus::kRunning, "running"},
    {RunStatus::kFinished, "finished"},
    {RunStatus::kBudgetSpent, "budget_spent"},
    {RunStatus::kInterrupted, "interrupted"},
    {RunStatus::kFailed, "failed"},
}};

constexpr std::array<std::pair<TaskStatus, const char*>, 5> kTaskStatusNames{{
    {TaskStatus::kPending, "pending"},
    {TaskStatus::kRunning, "running"},
    {TaskStatus::kFinished, "finished"},
    {TaskStatus::kBudgetSpent, "budget_spent"},
    {TaskStatus::kFailed, "failed"},
}};

constexpr std::array<std::pair<NodeKind, const char*>, 3> kNodeKindNames{{
    {NodeKind::kCuda, "cuda"},
    {NodeKind::kHybrid, "hybrid"},
    {NodeKind::kReference, "reference"},
}};

}  // namespace

const char* RunStatusName(RunStatus s) { return ToName(kRunStatusNames, s); }
const char* TaskStatusName(TaskStatus s) { return ToName(kTaskStatusNames, s); }
const char* NodeKindName(NodeKind k) { return ToName(kNodeKindNames, k); }
std::optional<RunStatus> RunStatusFromName(std::string_view n) {
  return FromName(kRunStatusNames, n);
}
std::optional<TaskStatus> TaskStatusFromName(std::string_view n) {
  return FromName(kTaskStatusNames, n);
}
std::optional<NodeKind> NodeKindFromName(std::string_view n) { return FromName(kNodeKindNames, n); }

OutcomeRecord MakeOutcomeRecord(const std::string& run_id, int task_index, int node,
                                const Outcome& outcome) {
  OutcomeRecord r;
  r.run_id = run_id;
  r.task_index = task_index;
  r.node = node;
  r.verdict = OutcomeName(outcome);
  r.outcome = ToJson(outcome);
  if (const auto* m = std::get_if<Measured>(&outcome)) {
    r.time_ms = m->time_ms.median;
    r.energy_mj = m->energy_mj_per_call;
    r.speedup = m->SpeedupVsEager();
  }
  return r;
}

}  // namespace kopt
