#include "loop/learned_wins.h"

#include <map>

#include "build/builder.h"
#include "propose/memory_query.h"

namespace kopt {

std::vector<LearnedWin> LearnedWins(const RunStore& store, const std::string& run_id,
                                    int task_index) {
  std::vector<LearnedWin> out;
  auto run = store.GetRun(run_id);
  auto task = store.GetTask(run_id, task_index);
  if (!run || !task) return out;
  std::map<int, OutcomeRecord> outcomes;
  for (OutcomeRecord& o : store.ListOutcomes(run_id, task_index)) outcomes[o.node] = std::move(o);
  std::map<int, NodeRecord> nodes;
  for (NodeRecord& n : store.ListNodes(run_id, task_index)) nodes[n.id] = std::move(n);
  std::string gpu = run->device.is_object() ? run->device.value("name", std::string()) : "";
  std::string op_class = TaskOpClass(&task->bundle);
  // A parent's time: its own median, or the reference's eager time for a root
  // that is the reference itself.
  auto parent_ms = [&](int id) -> std::optional<double> {
    auto o = outcomes.find(id);
    if (o != outcomes.end() && o->second.verdict == "measured" && o->second.time_ms)
      return o->second.time_ms;
    auto n = nodes.find(id);
    bool reference = n == nodes.end() || n->second.kind == NodeKind::kReference;
    if (reference && task->bundle.eager_ms) return task->bundle.eager_ms->median;
    return std::nullopt;
  };
  const std::string arch =
      run->options.is_object() ? run->options.value("arch", std::string()) : "";
  for (const auto& [id, n] : nodes) {
    if (!n.parent) continue;
    // A kernel emulated on the CPU (--arch host) was verified, but its time
    // says nothing about any GPU: never a win to learn from.
    if (arch == kHostArch && n.kind == NodeKind::kCuda) continue;
    auto o = outcomes.find(id);
    if (o == outcomes.end() || o->second.verdict != "measured" || !o->second.time_ms) continue;
    std::optional<double> p = parent_ms(*n.parent);
    if (!p || *o->second.time_ms >= *p) continue;
    LearnedWin w;
    w.task = task->name;
    w.op_class = op_class;
    std::vector<Diagnosis> parent_diagnoses;
    if (auto prof = store.GetProfile(run_id, task_index, *n.parent))
      parent_diagnoses = prof->diagnoses;
    w.bottleneck = Bottleneck(&task->bundle, parent_diagnoses);
    w.arch = arch;
    w.move = n.move;
    w.proposer = n.proposer;
    if (n.detail.is_object()) w.diagnosis = n.detail.value("diagnosis", std::string());
    if (w.diagnosis.empty() && !parent_diagnoses.empty()) w.diagnosis = parent_diagnoses[0].tool;
    w.verified = true;  // "measured" is the verifier's pass and a timing
    w.measured = true;
    w.parent_ms = *p;
    w.child_ms = *o->second.time_ms;
    w.provenance = {{"run", run_id}, {"node", id}, {"gpu", gpu}};
    out.push_back(std::move(w));
  }
  return out;
}

LearnedSummary AdmitLearnedWins(const RunStore& store, const std::string& run_id,
                                KnowledgeBase* kb) {
  LearnedSummary s;
  if (!kb) return s;
  for (const TaskRecord& t : store.ListTasks(run_id))
    for (const LearnedWin& w : LearnedWins(store, run_id, t.index)) {
      Admission a = kb->Admit(w);
      ++s.offered;
      s.admitted += a.admitted ? 1 : 0;
      s.admissions.push_back(std::move(a));
    }
  return s;
}

}  // namespace kopt
