// The Runner seam: capture a task, then verify and time candidates against
// it. The real one drives worker processes (Evaluator); a replay runner
// answers from recorded evaluations, so the loop and its tests run without a
// GPU.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "build/builder.h"
#include "core/json.h"
#include "core/outcome.h"
#include "core/task.h"
#include "run/verdict.h"
#include "task/bundle.h"
#include "task/contract.h"
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
  std::string source_hash;  ///< ContentHash of the candidate's source (what a replay runner keys on)
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
/// The inverse of ToJson, for records read back from files or the run store
/// (build results and raw replies come back as recorded).
EvalRecord EvalRecordFromJson(const Json& j);

class Runner {
 public:
  virtual ~Runner() = default;
  /// The device candidates run on.
  virtual const DeviceInfo& Device() = 0;
  /// Its measured ceilings (cached per device).
  virtual const Ceilings& DeviceCeilings() = 0;
  /// Captures the task (cached per task content and device). With
  /// `baselines`, eager and (if `compile`) torch.compile are timed too.
  /// Throws kopt::Error when the task cannot be loaded or run.
  virtual TaskBundle Bundle(const Task& task, bool baselines, bool compile) = 0;
  /// Builds, verifies and times one candidate; every failure is a value.
  virtual EvalRecord Evaluate(const Task& task, const TaskBundle& bundle, const Candidate& candidate,
                              const EvalOptions& options) = 0;
  /// Starts what the runner needs in the background (optional).
  virtual void Prewarm() {}
  /// Compiles several cuda candidates ahead of evaluation (optional).
  virtual void Prebuild(const std::vector<Candidate>& candidates) {}

  /// Progress lines ("capturing 03_softmax ...") go here when set.
  std::function<void(const std::string&)> on_progress;
};

}  // namespace kopt
