#include "loop/node_profiler.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "profile/profiler.h"

namespace kopt {

const char* ProfileModeName(ProfileMode m) {
  switch (m) {
    case ProfileMode::kNone:
      return "none";
    case ProfileMode::kWinner:
      return "winner";
    case ProfileMode::kBest:
      return "best";
    case ProfileMode::kAuto:
      return "auto";
  }
  return "auto";
}

ProfileMode ParseProfileMode(const std::string& name) {
  if (name == "none") return ProfileMode::kNone;
  if (name == "winner") return ProfileMode::kWinner;
  if (name == "best") return ProfileMode::kBest;
  if (name == "auto") return ProfileMode::kAuto;
  throw Error("--profile " + name + " is not a profile mode: use auto, best, winner or none.");
}

ProfileData MakeProfileData(const Task& task, const TaskBundle& bundle, const Candidate& candidate,
                            const EvalRecord& record, const DeviceInfo& device,
                            const Ceilings& ceilings, int calls) {
  ProfileData d;
  d.task_name = task.name;
  d.candidate_name = candidate.name;
  d.candidate_kind = CandidateKindName(candidate.kind);
  d.outcome = ToJson(record.outcome);
  d.context.device = device;
  d.context.ceilings = ceilings;
  d.context.calls_profiled = calls;
  if (const auto* m = std::get_if<Measured>(&record.outcome)) {
    d.context.time_ms = m->time_ms.median;
    // A cuda candidate's host clock is mostly kopt's own ctypes call (20-30 us
    // on the H200), not the candidate's: only hybrids' host time is theirs (the
    // timeline measures it). Idle GPU time still shows in kernel vs event time.
    if (candidate.kind == CandidateKind::kHybrid) d.context.host_ms = m->host_ms.median;
  }
  d.context.min_bytes = bundle.min_bytes;
  d.context.latency_ms = bundle.latency_stages * kStageLatencyMs;
  d.context.flops = bundle.flops;
  d.context.matrix_flops = bundle.matrix_flops;
  d.context.flops_by_precision = FlopsByPrecision(bundle);
  if (record.contract.is_object() && record.contract.contains("precision") &&
      record.contract["precision"].is_string())
    d.context.contract_precision = record.contract["precision"].get<std::string>();
  const std::string dtype = ComputeDtype(bundle);
  d.context.matrix_precision = dtype == "float16" ? "fp16" : dtype == "bfloat16" ? "bf16" : "fp32";
  return d;
}

ProfileTarget ProfileTargetOf(const Task& task, const Candidate& candidate,
                              const EvalRecord& record, std::vector<BuildResult>* objects) {
  bool built = record.build && record.build->ok;
  ProfileTarget target;
  target.task = task.path;
  target.kind = CandidateKindName(candidate.kind);
  target.candidate = built ? record.build->so_path : candidate.path;
  if (built) objects->push_back(*record.build);
  return target;
}

NodeProfile StoredProfileOf(const ProfileData& data, const DiagnosisReport& report) {
  NodeProfile p;
  p.ok = true;
  Json tiers = Json::array();
  double seconds = 0;
  for (const auto& [name, s] : data.tier_seconds) {
    tiers.push_back(name);
    seconds += s;
  }
  p.profile = Json{{"tiers", tiers},
                   {"tier_seconds", data.tier_seconds},
                   {"context", ToJson(data.context)},
                   {"report", ToJson(report)},
                   {"notes", data.notes}};
  if (data.timeline.is_object()) p.profile["timeline"] = data.timeline;
  p.gpu_s = seconds;
  p.diagnoses = RankedDiagnoses(report);  // largest share of the whole call first
  return p;
}

namespace {

class ProcessNodeProfiler : public NodeProfiler {
 public:
  explicit ProcessNodeProfiler(NodeProfilerConfig c)
      : c_(std::move(c)), profiler_(MakeProcessProfiler(c_.ncu)) {}

  NodeProfile Profile(const Task& task, const TaskBundle& bundle, const Candidate& candidate,
                      const EvalRecord& record) override {
    auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    NodeProfile failed;
    if (!std::holds_alternative<Measured>(record.outcome)) {
      failed.error = candidate.name + " is not profiled: it was not measured correct.";
      return failed;
    }
    bool cuda = candidate.kind == CandidateKind::kCuda;
    if (cuda && !(record.build && record.build->ok)) {
      failed.error = candidate.name + " is not profiled: its evaluation kept no build to profile.";
      return failed;
    }
    if (!c_.runner) {
      failed.error = "the profiler has no runner to ask for the device";
      return failed;
    }
    ProfileData d = MakeProfileData(task, bundle, candidate, record, c_.runner->Device(),
                                    c_.runner->DeviceCeilings(), c_.calls);
    std::vector<BuildResult> objects;
    ProfileTarget target = ProfileTargetOf(task, candidate, record, &objects);
    target.device = c_.gpu;
    target.python = c_.python;
    target.repo_root = c_.repo_root;
    target.cache_dir = c_.cache_dir;
    target.arch = c_.arch;
    target.calls = c_.calls;
    TierOptions to;
    to.tier = c_.tier;
    to.hybrid = !cuda;
    to.progress = c_.progress;
    try {
      RunProfileTiers(*profiler_, target, objects, to, c_.data_dir, &d);
      NodeProfile p = StoredProfileOf(d, DiagnoseProfileData(d, c_.data_dir));
      p.gpu_s = elapsed();
      return p;
    } catch (const std::exception& e) {
      failed.error = e.what();
      failed.gpu_s = elapsed();
      return failed;
    }
  }

 private:
  NodeProfilerConfig c_;
  std::unique_ptr<Profiler> profiler_;
};

}  // namespace

std::unique_ptr<NodeProfiler> MakeProcessNodeProfiler(NodeProfilerConfig config) {
  return std::make_unique<ProcessNodeProfiler>(std::move(config));
}

}  // namespace kopt
