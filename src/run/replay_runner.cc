#include "run/replay_runner.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "store/run_store.h"

namespace kopt {
namespace {

class ReplayRunner : public Runner {
 public:
  explicit ReplayRunner(ReplayData data) : data_(std::move(data)) {}

  const DeviceInfo& Device() override { return data_.device; }
  const Ceilings& DeviceCeilings() override { return data_.ceilings; }

  TaskBundle Bundle(const Task& task, bool baselines, bool compile) override {
    auto it = data_.bundles.find(task.name);
    if (it == data_.bundles.end())
      throw Error(fmt::format("the replay has no capture of task {}: record it on a GPU first.", task.name));
    return it->second;
  }

  EvalRecord Evaluate(const Task& task, const TaskBundle& bundle, const Candidate& candidate,
                      const EvalOptions& options) override {
    std::string hash = ContentHash({candidate.source});
    auto it = data_.records.find(hash);
    if (it == data_.records.end()) {
      EvalRecord r;
      r.task_name = task.name;
      r.candidate_name = candidate.name;
      r.candidate_kind = CandidateKindName(candidate.kind);
      r.source_hash = hash;
      r.outcome = Crashed{"replay", "no recorded evaluation of this candidate (source hash " + hash.substr(0, 12) +
                                        ")"};
      return r;
    }
    EvalRecord r = it->second;
    r.task_name = task.name;
    r.candidate_name = candidate.name;
    if (!data_.rejudge || r.checks.is_null()) return r;
    // The recorded worker facts, judged by today's policy under the caller's
    // contract (as tests/replay_test.cc does for the adversarial records).
    std::optional<CleanFacts> clean;
    if (r.clean.is_object()) clean = CleanFactsFromJson(r.clean);
    const CleanFacts* cp = clean ? &*clean : nullptr;
    std::vector<std::string> reasons = JudgeChecks(r.checks, bundle, options.policy, options.contract, cp);
    if (!reasons.empty()) {
      r.outcome = Incorrect{reasons};
    } else if (!r.timing.is_null()) {
      r.outcome = JudgeTiming(r.timing, bundle, options.policy, options.contract, cp);
    }
    return r;
  }

 private:
  ReplayData data_;
};

}  // namespace

ReplayData ReplayFromResultFiles(const std::vector<std::filesystem::path>& files) {
  ReplayData d;
  for (const auto& f : files) {
    Json j = ReadJsonFile(f);
    if (j.contains("bundle")) {
      TaskBundle b = BundleFromJson(j["bundle"]);
      d.device = b.device;
      d.bundles[b.task_name] = b;
    }
    for (const auto& rec : j.value("records", Json::array())) {
      EvalRecord r = EvalRecordFromJson(rec);
      if (!r.source_hash.empty()) d.records[r.source_hash] = r;
    }
  }
  return d;
}

ReplayData ReplayFromRun(const RunStore& store, const std::string& run_id) {
  ReplayData d;
  auto run = store.GetRun(run_id);
  if (!run) throw Error("there is no run " + run_id + " in the run store: see kopt runs.");
  if (run->device.is_object() && !run->device.empty())
    d.device = DeviceInfoFromHello(Json{{"device", run->device}, {"torch", run->device.value("torch", "")}});
  for (const TaskRecord& t : store.ListTasks(run_id)) {
    d.bundles[t.name] = t.bundle;
    std::map<int, std::string> hashes;
    for (const NodeRecord& n : store.ListNodes(run_id, t.index)) hashes[n.id] = n.source_hash;
    for (const OutcomeRecord& o : store.ListOutcomes(run_id, t.index)) {
      if (!o.evaluation.is_object() || o.evaluation.empty()) continue;
      EvalRecord r = EvalRecordFromJson(o.evaluation);
      if (r.source_hash.empty()) r.source_hash = hashes[o.node];
      d.records[r.source_hash] = r;
    }
  }
  return d;
}

std::unique_ptr<Runner> MakeReplayRunner(ReplayData data) { return std::make_unique<ReplayRunner>(std::move(data)); }

}  // namespace kopt
