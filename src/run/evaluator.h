// The Runner: build, verify and time one candidate; capture tasks.
#pragma once

#include <filesystem>
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
  Evaluator(Builder* builder, WorkerChannel* worker, EvaluatorConfig config);

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
  /// Compiles several cuda candidates in parallel ahead of evaluation.
  void Prebuild(const std::vector<Candidate>& candidates);

  /// Progress lines ("capturing 03_softmax ...") go here when set.
  std::function<void(const std::string&)> on_progress;

 private:
  std::optional<BuildResult> BuildCandidate(const Candidate& c);
  Outcome FailureOutcome(const WorkerReply& reply, const std::string& phase);
  void Progress(const std::string& line);

  Builder* builder_;
  WorkerChannel* worker_;
  EvaluatorConfig config_;
  std::map<std::string, BuildResult> prebuilt_;  ///< by source: what Prebuild compiled or found
  std::optional<DeviceInfo> device_;
  std::optional<Ceilings> ceilings_;
};

}  // namespace kopt
