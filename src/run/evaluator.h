// The Runner: build, verify and time one candidate; capture tasks.
#pragma once

#include <filesystem>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "build/builder.h"
#include "core/json.h"
#include "core/outcome.h"
#include "core/task.h"
#include "run/verdict.h"
#include "run/worker_channel.h"
#include "task/bundle.h"
#include "task/device.h"

namespace kopt {

struct EvalOptions {
  VerifyPolicy policy;
  Contract contract;  ///< the task's (docs/verification.md, "Contract")
  std::vector<int> seeds = {11, 12, 13};
  bool time_compile = false;      ///< also time torch.compile, interleaved
  Json timing = Json::object();   ///< overrides of the worker's TIMING fields
  double verify_timeout_s = 120;  ///< a candidate still running then is hung
  /// Added for hybrid candidates, whose loading may compile extensions
  /// (load_inline takes about a minute).
  double hybrid_load_timeout_s = 300;
  double time_timeout_s = 600;
};

/// How verification and timing went beyond the verdict: what was checked,
/// where the reference came from.
struct TrustFacts {
  DistributionPlan distributions;  ///< the input distributions checked and skipped
  bool clean_reference = false;     ///< checked against a clean process
  Json sandbox;                     ///< the candidate worker's sandbox report (null: not sandboxed)
};

/// Everything one evaluation produced; the verdict is `outcome`.
struct EvalRecord {
  std::string task_name;
  std::string candidate_name;
  std::string candidate_kind;
  Outcome outcome = Crashed{"internal", "not evaluated"};
  std::optional<BuildResult> build;
  double build_s = 0;
  double verify_s = 0;
  double time_s = 0;
  /// From source to verdict, timing excluded: nvcc's time for this source
  /// (now, or in this process's prebuild) plus verification.
  double source_to_verdict_s = 0;
  double floor_ms = 0;
  Json contract;  ///< the contract the candidate was judged under
  TrustFacts trust;
  Json clean;    ///< the clean process's facts the verdict used (ToJson(CleanFacts)); null: none
  Json checks;   ///< the worker's raw evaluate reply
  Json timing;   ///< the worker's raw time reply (all samples)
};

Json ToJson(const EvalRecord& r);

struct EvaluatorConfig {
  std::filesystem::path cache_dir;  ///< ceilings and bundles live here
  bool refresh = false;             ///< ignore cached ceilings and bundles
};

/// The default cache folder: $KOPT_CACHE, else $XDG_CACHE_HOME/kopt, else
/// ~/.cache/kopt.
std::filesystem::path DefaultCacheDir();

class Evaluator {
 public:
  /// `worker` runs candidates; `clean` (may be null, then `worker` serves)
  /// is a second worker that never loads a candidate: capture, the
  /// baselines, and the reference facts verdicts rest on come from it.
  Evaluator(Builder* builder, WorkerChannel* worker, EvaluatorConfig config, WorkerChannel* clean = nullptr);

  /// The worker's device (asks once).
  const DeviceInfo& Device();
  /// The device's ceilings, measured once per device and cached on disk.
  const Ceilings& DeviceCeilings();
  /// Captures the task (cached per task content and device). With
  /// `baselines`, eager and (if `compile`) torch.compile are timed too.
  /// Throws kopt::Error when the task cannot be loaded or run.
  TaskBundle Bundle(const Task& task, bool baselines, bool compile);
  /// Builds, verifies and (optionally) times one candidate.
  EvalRecord Evaluate(const Task& task, const TaskBundle& bundle, const Candidate& candidate,
                      const EvalOptions& options);
  /// Starts both workers in the background (optional; they start on first use).
  void Prewarm();
  /// Compiles several cuda candidates in parallel ahead of evaluation.
  void Prebuild(const std::vector<Candidate>& candidates);

  /// Progress lines ("capturing 03_softmax ...") go here when set.
  std::function<void(const std::string&)> on_progress;

 private:
  std::optional<BuildResult> BuildCandidate(const Candidate& c);
  Outcome FailureOutcome(const WorkerReply& reply, const std::string& phase);
  void Progress(const std::string& line);
  /// Restarts the candidate worker after a candidate that changed it.
  void RecycleIfTainted(const EvalRecord& rec);
  /// The clean worker's reference facts for these checks (cached).
  const Json& CleanReference(const Task& task, const TaskBundle& bundle, const EvalOptions& options,
                             const std::vector<std::string>& distributions);
  /// Eager (and torch.compile) timed in the clean worker, once per task and
  /// timing configuration in this session.
  CleanFacts CleanBaselines(const Task& task, const TaskBundle& bundle, const Json& timing, bool compile);

  Builder* builder_;
  WorkerChannel* worker_;
  WorkerChannel* clean_;
  EvaluatorConfig config_;
  std::optional<DeviceInfo> device_;
  Json sandbox_report_;
  std::optional<Ceilings> ceilings_;
  std::uint64_t fp_key_ = 0;  ///< fingerprint sample key, random per session
  std::map<std::string, Json> clean_references_;
  std::map<std::string, CleanFacts> clean_baselines_;
};

}  // namespace kopt
