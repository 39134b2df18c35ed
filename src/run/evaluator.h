// The real Runner: worker processes (a candidate worker, sandboxed, and a
// clean one that never loads a candidate) and the nvcc builder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "build/builder.h"
#include "core/json.h"
#include "core/outcome.h"
#include "core/paths.h"
#include "core/task.h"
#include "run/protocol.h"
#include "run/runner.h"
#include "run/verdict.h"
#include "run/worker_channel.h"
#include "store/file_cache.h"
#include "task/bundle.h"
#include "task/device.h"

namespace kopt {

struct EvaluatorConfig {
  std::filesystem::path cache_dir;  ///< ceilings and bundles live here (store/file_cache.h)
  bool refresh = false;             ///< ignore cached ceilings and bundles
  /// Builds into the cache kopt.load_cuda uses inside the candidate worker
  /// (WorkerCacheDir), so Prebuild can compile a hybrid's embedded CUDA
  /// sources ahead; null: hybrids compile when the worker loads them.
  Builder* worker_builder = nullptr;
};

class Evaluator : public Runner {
 public:
  /// `worker` runs candidates; `clean` (may be null, then `worker` serves)
  /// is a second worker that never loads a candidate: capture, the
  /// baselines, and the reference facts verdicts rest on come from it.
  Evaluator(Builder* builder, WorkerChannel* worker, EvaluatorConfig config,
            WorkerChannel* clean = nullptr);

  /// The worker's device (asks once).
  const DeviceInfo& Device() override;
  /// The device's ceilings, measured once per device and cached on disk.
  const Ceilings& DeviceCeilings() override;
  TaskBundle Bundle(const Task& task, bool baselines, bool compile) override;
  EvalRecord Evaluate(const Task& task, const TaskBundle& bundle, const Candidate& candidate,
                      const EvalOptions& options) override;
  /// Starts both workers in the background (optional; they start on first use).
  void Prewarm() override;
  /// Compiles several cuda candidates in parallel ahead of evaluation, and
  /// the CUDA sources hybrids hand unchanged to kopt.load_cuda
  /// (build/embedded_sources.h) through config.worker_builder.
  void Prebuild(const std::vector<Candidate>& candidates) override;

 private:
  std::optional<BuildResult> BuildCandidate(const Candidate& c);
  Outcome FailureOutcome(const WorkerReply& reply, const std::string& phase);
  void Progress(const std::string& line);
  /// Restarts the candidate worker after a candidate that changed it.
  void RecycleIfTainted(const EvalRecord& rec);
  /// The clean worker's reference facts for these checks (cached).
  const ReferenceReply& CleanReference(const Task& task, const TaskBundle& bundle,
                                       const EvalOptions& options,
                                       const std::vector<std::string>& distributions);
  /// Eager (and torch.compile) timed in the clean worker, once per task and
  /// timing configuration in this session.
  CleanFacts CleanBaselines(const Task& task, const TaskBundle& bundle, const Json& timing,
                            bool compile);

  Builder* builder_;
  WorkerChannel* worker_;
  WorkerChannel* clean_;
  EvaluatorConfig config_;
  FileCache cache_;                              ///< ceilings and bundles, under config_.cache_dir
  std::mutex prebuilt_mu_;                       ///< Prebuild may run on the loop's compile thread
  std::map<std::string, BuildResult> prebuilt_;  ///< by source: what Prebuild compiled or found
  std::optional<DeviceInfo> device_;
  Json sandbox_report_;
  std::optional<Ceilings> ceilings_;
  std::uint64_t fp_key_ = 0;  ///< fingerprint sample key, random per session
  std::map<std::string, ReferenceReply> clean_references_;
  std::map<std::string, CleanFacts> clean_baselines_;
};

}  // namespace kopt
