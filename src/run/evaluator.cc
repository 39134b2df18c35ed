#include "run/evaluator.h"

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "build/embedded_sources.h"
#include "core/error.h"
#include "core/hash.h"
#include "run/capture.h"
#include "run/protocol.h"
#include "run/static_check.h"

namespace kopt {
namespace {

// Bumped whenever the bundle's contents or their derivation change, so stale
// cache entries are captured again.
constexpr const char* kBundleFormat = "bundle-v5";  // v5: op graph v2 (dataflow and args)

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string Tail(const std::string& s, size_t n = 1500) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// A task failure is the user's input, not a candidate's: one sentence.
[[noreturn]] void ThrowTaskError(const Task& task, const WorkerReply& r, const std::string& what) {
  std::string detail = r.message.empty() ? Tail(r.stderr_tail, 400) : r.message;
  auto nl = detail.find_last_of('\n', detail.size() > 1 ? detail.size() - 2 : 0);
  if (detail.size() > 300 && nl != std::string::npos) detail = detail.substr(nl + 1);
  throw Error(
      fmt::format("{} of task {} failed ({}): fix the task file so that Model(*get_init_inputs()) "
                  "runs on get_inputs().",
                  what, task.name, detail));
}

// What the worker needs of the contract: the precision to emulate, whether
// to record torch operators, the second shape.
Json WorkerContract(const Contract& c) {
  Json shape = Json::object();
  for (const auto& [k, v] : c.second_shape) shape[k] = v;
  return Json{{"precision", PrecisionName(c.precision)},
              {"record_ops", !c.torch_ops},
              {"second_shape", shape}};
}

Json CandidateRef(const Candidate& c, const std::optional<BuildResult>& build) {
  if (c.kind == CandidateKind::kCuda)
    return Json{{"kind", "cuda"}, {"so", build ? build->so_path.string() : ""}};
  return Json{{"kind", "hybrid"}, {"path", c.path.string()}};
}

}  // namespace

Evaluator::Evaluator(Builder* builder, WorkerChannel* worker, EvaluatorConfig config,
                     WorkerChannel* clean)
    : builder_(builder),
      worker_(worker),
      clean_(clean ? clean : worker),
      config_(std::move(config)),
      cache_(config_.cache_dir) {
  std::random_device rd;
  fp_key_ = (static_cast<std::uint64_t>(rd()) << 20) ^ rd();
  fp_key_ &= (1ULL << 40) - 1;  // stays exact through JSON doubles
}

void Evaluator::Progress(const std::string& line) {
  if (on_progress) on_progress(line);
}

const DeviceInfo& Evaluator::Device() {
  if (!device_) {
    WorkerReply r = worker_->Call(Json{{"op", "hello"}}, 120);
    if (!r.ok())
      throw Error("the evaluation worker did not answer hello (" + r.message +
                  "): check PyTorch with `python3 -c 'import torch'`.");
    HelloReply hello = ParseHelloReply(r.body);
    device_ = hello.device;
    sandbox_report_ = hello.sandbox ? ToJson(*hello.sandbox) : Json();
  }
  return *device_;
}

const Ceilings& Evaluator::DeviceCeilings() {
  if (ceilings_) return *ceilings_;
  const DeviceInfo& dev = Device();
  const std::string key = DeviceCacheKey(dev);
  if (!config_.refresh) {  // a damaged entry is a miss: measured again
    ceilings_ = cache_.Get(CacheCollection::kDevices, key,
                           [](const Json& j) { return CeilingsFromJson(j.at("ceilings")); });
    if (ceilings_) return *ceilings_;
  }
  Progress("measuring device ceilings (once per GPU)");
  WorkerReply r = clean_->Call(Json{{"op", "ceilings"}, {"seconds", 5}}, 600);
  if (!r.ok())
    throw Error("measuring the device's ceilings failed (" + r.message +
                "): check that the GPU works with `nvidia-smi`.");
  ceilings_ = CeilingsFromProbes(ParseCeilingsReply(r.body), dev);
  cache_.Put(CacheCollection::kDevices, key,
             Json{{"device", ToJson(dev)}, {"ceilings", ToJson(*ceilings_)}});
  return *ceilings_;
}

TaskBundle Evaluator::Bundle(const Task& task, bool baselines, bool compile) {
  const DeviceInfo& dev = Device();
  std::string hash = ContentHash({kBundleFormat, ReadTextFile(task.path)});
  const std::string key = BundleCacheKey(dev, task.path, hash);
  std::optional<TaskBundle> bundle;
  if (!config_.refresh) bundle = cache_.Get(CacheCollection::kBundles, key, BundleFromJson);
  if (!bundle) {
    const Ceilings& ceilings = DeviceCeilings();
    Progress("capturing " + task.name);
    WorkerReply r = clean_->Call(Json{{"op", "capture"},
                                      {"task", task.path.string()},
                                      {"seeds", {0, 1, 2}},
                                      {"profile", true}},
                                 900);
    if (!r.ok()) ThrowTaskError(task, r, "capture");
    bundle = BundleFromCapture(task, hash, ParseCaptureReply(r.body), dev, ceilings);
    cache_.Put(CacheCollection::kBundles, key, ToJson(*bundle));
  }
  bool need_eager = baselines && !bundle->eager_ms;
  bool need_compile = baselines && compile && !bundle->compile_ms && bundle->compile_error.empty();
  if (need_eager || need_compile) {
    Json contenders = Json::array({"eager"});
    if (need_compile) contenders.push_back("compile");
    Progress("timing baselines of " + task.name +
             (need_compile ? " (eager, torch.compile)" : " (eager)"));
    WorkerReply r = clean_->Call(Json{{"op", "time"},
                                      {"task", task.path.string()},
                                      {"candidate", nullptr},
                                      {"timing", {{"contenders", contenders}, {"energy", false}}}},
                                 1200);
    if (!r.ok()) ThrowTaskError(task, r, "timing the baselines");
    const TimeReply reply = ParseTimeReply(r.body);
    auto take = [&](const char* who, std::optional<SampleSummary>* into, std::string* error) {
      auto it = reply.samples.find(who);
      if (it == reply.samples.end()) return;
      const ContenderSamples& s = it->second;
      if (s.error) {
        if (error) *error = *s.error;
        return;
      }
      const std::vector<double>& v = s.event_ms.empty() ? s.host_ms : s.event_ms;
      if (!v.empty()) *into = Summarize(v);
    };
    take("eager", &bundle->eager_ms, nullptr);
    take("compile", &bundle->compile_ms, &bundle->compile_error);
    cache_.Put(CacheCollection::kBundles, key, ToJson(*bundle));
  }
  return *bundle;
}

std::optional<BuildResult> Evaluator::BuildCandidate(const Candidate& c) {
  if (c.kind != CandidateKind::kCuda) return std::nullopt;
  // Prebuilt by this process: its own result (compiled, not cached).
  {
    std::lock_guard<std::mutex> lock(prebuilt_mu_);
    if (auto it = prebuilt_.find(c.source); it != prebuilt_.end()) return it->second;
  }
  return builder_->Build(BuildRequest{c.source, c.name, {}});
}

void Evaluator::RecycleIfTainted(const EvalRecord& rec) {
  // A candidate that changed the process (replaced torch functions, hooked
  // or slowed the reference, tampered with the harness) would taint every
  // later candidate's checks in it: the next one starts a fresh worker.
  const auto* inc = std::get_if<Incorrect>(&rec.outcome);
  if (!inc || clean_ == worker_) return;
  for (const auto& r : inc->reasons)
    if (r.find("clean process") != std::string::npos ||
        r.find("the candidate replaced") != std::string::npos) {
      Progress("restarting the candidate worker: " + rec.candidate_name + " changed its process");
      worker_->Recycle();
      worker_->Prewarm();
      return;
    }
}

void Evaluator::Prewarm() {
  worker_->Prewarm();
  if (clean_ != worker_) clean_->Prewarm();
}

void Evaluator::Prebuild(const std::vector<Candidate>& candidates) {
  std::vector<BuildRequest> requests, embedded;
  for (const auto& c : candidates) {
    if (c.kind == CandidateKind::kCuda) requests.push_back({c.source, c.name, {}});
    if (c.kind == CandidateKind::kHybrid && config_.worker_builder)
      for (EmbeddedSource& e : EmbeddedCudaSources(c.source))
        embedded.push_back({std::move(e.source), e.name.empty() ? c.name : e.name, {}});
  }
  // What load_cuda builds is cached by content in the worker's cache; the
  // worker reports its own build failures, so these results are not kept.
  if (!embedded.empty()) config_.worker_builder->BuildAll(embedded);
  if (requests.empty()) return;
  std::vector<BuildResult> results = builder_->BuildAll(requests);
  std::lock_guard<std::mutex> lock(prebuilt_mu_);
  for (size_t i = 0; i < requests.size(); ++i) prebuilt_[requests[i].source] = results[i];
}

Outcome Evaluator::FailureOutcome(const WorkerReply& r, const std::string& phase) {
  switch (r.status) {
    case WorkerReply::Status::kTimeout:
      return TimedOut{phase, r.wall_s};
    case WorkerReply::Status::kDied:
      return Crashed{"worker_died", r.message + "\n" + Tail(r.stderr_tail)};
    default:
      return Crashed{r.error_kind, r.message};
  }
}

const ReferenceReply& Evaluator::CleanReference(const Task& task, const TaskBundle& bundle,
                                                const EvalOptions& options,
                                                const std::vector<std::string>& distributions) {
  Json request{{"op", "reference"},
               {"task", task.path.string()},
               {"seeds", options.seeds},
               {"distributions", distributions},
               {"contract", WorkerContract(options.contract)},
               {"fp_key", fp_key_},
               {"fp64", options.policy.tolerance == TolerancePolicy::kCalibrated}};
  std::string key = bundle.task_hash + request.dump();
  auto it = clean_references_.find(key);
  if (it != clean_references_.end()) return it->second;
  WorkerReply r = clean_->Call(request, options.verify_timeout_s + 300);
  if (!r.ok()) ThrowTaskError(task, r, "computing the reference in a clean process");
  return clean_references_[key] = ParseReferenceReply(r.body);
}

CleanFacts Evaluator::CleanBaselines(const Task& task, const TaskBundle& bundle, const Json& timing,
                                     bool compile) {
  Json cfg = timing;
  Json contenders = Json::array({"eager"});
  if (compile) contenders.push_back("compile");
  cfg["contenders"] = contenders;
  cfg["energy"] = false;
  cfg["check_p"] = 0;
  cfg["suspicious_check_p"] = 0;
  std::string key = bundle.task_hash + cfg.dump();
  auto it = clean_baselines_.find(key);
  if (it != clean_baselines_.end()) return it->second;
  Progress("timing the baselines of " + task.name + " in the clean process");
  WorkerReply r = clean_->Call(
      Json{{"op", "time"}, {"task", task.path.string()}, {"candidate", nullptr}, {"timing", cfg}},
      1200);
  if (!r.ok()) ThrowTaskError(task, r, "timing the baselines in a clean process");
  CleanFacts f;
  const TimeReply reply = ParseTimeReply(r.body);
  auto take = [&](const char* who) -> std::optional<SampleSummary> {
    auto it = reply.samples.find(who);
    if (it == reply.samples.end() || it->second.error) return std::nullopt;
    const ContenderSamples& s = it->second;
    if (s.event_ms.empty()) f.host_clock = true;
    const std::vector<double>& v = s.event_ms.empty() ? s.host_ms : s.event_ms;
    if (v.empty()) return std::nullopt;
    return Summarize(v);
  };
  f.eager_ms = take("eager");
  f.compile_ms = take("compile");
  return clean_baselines_[key] = f;
}

EvalRecord Evaluator::Evaluate(const Task& task, const TaskBundle& bundle,
                               const Candidate& candidate, const EvalOptions& options) {
  EvalRecord rec;
  rec.task_name = task.name;
  rec.candidate_name = candidate.name;
  rec.candidate_kind = CandidateKindName(candidate.kind);
  rec.source_hash = ContentHash({candidate.source});
  rec.floor_ms = bundle.floor_ms;
  rec.contract = ToJson(options.contract);
  auto t0 = std::chrono::steady_clock::now();
  Prewarm();  // the workers start while nvcc runs

  rec.build = BuildCandidate(candidate);
  // A prebuilt candidate's nvcc time still belongs to the path from source to
  // verdict.
  bool prebuilt = false;
  {
    std::lock_guard<std::mutex> lock(prebuilt_mu_);
    prebuilt = prebuilt_.count(candidate.source) > 0;
  }
  rec.build_s = rec.build && (rec.build->cache_hit || prebuilt) ? rec.build->compile_s : Since(t0);
  if (rec.build && !rec.build->ok) {
    rec.outcome = BuildFailed{rec.build->log};
    rec.source_to_verdict_s = rec.build_s;
    return rec;
  }
  Json cand = CandidateRef(candidate, rec.build);
  std::string dtype = bundle.outputs.empty() ? "float32" : bundle.outputs[0].dtype;
  Tolerance tol = KernelBenchTolerance(dtype);
  rec.trust.distributions = PlanDistributions(bundle, options.contract.distributions);
  rec.trust.sandbox = sandbox_report_;
  rec.contract["distributions_checked"] = rec.trust.distributions.checked;

  auto tv = std::chrono::steady_clock::now();
  // The clean process's facts first (cached per task): a candidate cannot
  // have touched them.
  std::optional<CleanFacts> clean;
  if (clean_ != worker_) {
    clean.emplace();
    clean->reference = CleanReference(task, bundle, options, rec.trust.distributions.checked);
    rec.trust.clean_reference = true;
  }
  WorkerReply v = worker_->Call(
      Json{{"op", "evaluate"},
           {"task", task.path.string()},
           {"candidate", cand},
           {"seeds", options.seeds},
           {"distributions", rec.trust.distributions.checked},
           {"fp_key", fp_key_},
           {"kernelbench_tol", {{"atol", tol.atol}, {"rtol", tol.rtol}}},
           {"fp64", options.policy.tolerance == TolerancePolicy::kCalibrated},
           {"contract", WorkerContract(options.contract)},
           {"timing", nullptr}},
      options.verify_timeout_s +
          (candidate.kind == CandidateKind::kHybrid ? options.hybrid_load_timeout_s : 0));
  rec.verify_s = Since(tv);
  if (clean) rec.clean = ToJson(*clean);
  if (!v.ok()) {
    if (v.error_kind == "task_load") ThrowTaskError(task, v, "loading");
    rec.outcome = FailureOutcome(v, "verification");
    rec.source_to_verdict_s = rec.build_s + rec.verify_s;
    return rec;
  }
  rec.checks = v.body;
  std::vector<std::string> reasons = JudgeChecks(ParseEvaluateReply(v.body), bundle, options.policy,
                                                 options.contract, clean ? &*clean : nullptr);
  // The static layer, after the mechanism's reasons: the source itself says
  // it calls what the contract forbids.
  for (auto& r : StaticContractReasons(candidate, bundle, options.contract))
    reasons.push_back(std::move(r));
  rec.source_to_verdict_s = rec.build_s + rec.verify_s;
  if (!reasons.empty()) {
    rec.outcome = Incorrect{reasons};
    RecycleIfTainted(rec);
    return rec;
  }
  Json timing = options.timing;
  Json contenders = Json::array({"candidate", "eager"});
  if (options.time_compile) contenders.push_back("compile");
  timing["contenders"] = contenders;
  if (!timing.contains("energy")) timing["energy"] = true;
  timing["precision"] = PrecisionName(options.contract.precision);  // the audit's allowance
  // Timed calls judged after the fact, more of them far below the floor; a
  // stochastic reference cannot be compared call by call.
  bool stochastic = bundle.HasFlag(flags::kStochastic);
  if (!timing.contains("check_p"))
    timing["check_p"] = stochastic ? 0.0 : options.policy.timed_check_p;
  if (!timing.contains("suspicious_check_p"))
    timing["suspicious_check_p"] = stochastic ? 0.0 : options.policy.suspicious_check_p;
  timing["suspicious_fraction"] = options.policy.suspicious_fraction;
  timing["floor_ms"] = bundle.floor_ms;
  auto tt = std::chrono::steady_clock::now();
  if (clean) {
    Json base = timing;
    base.erase("contenders");
    CleanFacts b = CleanBaselines(task, bundle, base, options.time_compile);
    clean->eager_ms = b.eager_ms;
    clean->compile_ms = b.compile_ms;
    clean->host_clock = b.host_clock;
    rec.clean = ToJson(*clean);
  }
  Json request{
      {"op", "time"}, {"task", task.path.string()}, {"candidate", cand}, {"timing", timing}};
  if (clean) request["probe"] = {{"seed", options.seeds.front()}, {"fp_key", fp_key_}};
  WorkerReply t = worker_->Call(request, options.time_timeout_s);
  rec.time_s = Since(tt);
  if (!t.ok()) {
    rec.outcome = FailureOutcome(t, "timing");
    return rec;
  }
  rec.timing = t.body;
  rec.outcome = JudgeTiming(ParseTimeReply(t.body), bundle, options.policy, options.contract,
                            clean ? &*clean : nullptr);
  RecycleIfTainted(rec);
  return rec;
}

}  // namespace kopt
