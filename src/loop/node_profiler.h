// The loop's profile stage: a measured node profiled (static, ncu tier 1 and
// tier 2, the timeline where it pays) and diagnosed by the analysis tools, as
// a value the run store keeps and the proposers read. `kopt profile` builds
// its ProfileData the same way (MakeProfileData).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/diagnosis.h"
#include "core/json.h"
#include "core/task.h"
#include "diagnose/profile_session.h"
#include "run/runner.h"
#include "task/bundle.h"

namespace kopt {

/// When the loop profiles a node.
enum class ProfileMode {
  kNone,    ///< never
  kWinner,  ///< each task's winner, once the search named it
  kBest,    ///< each new best during the search (up to a limit), and the winner
  kAuto,    ///< kBest when the proposer reads diagnoses, else kWinner
};
/// "none", "winner", "best", "auto".
const char* ProfileModeName(ProfileMode m);
/// Throws kopt::Error naming the choices for an unknown name.
ProfileMode ParseProfileMode(const std::string& name);

/// One node's profile and its diagnoses; a failure is a value (`error`).
struct NodeProfile {
  bool ok = false;
  std::string error;  ///< one sentence when !ok
  Json profile =
      Json::object();  ///< tiers, their seconds, the call's context, the diagnosis report
  std::vector<Diagnosis> diagnoses;  ///< largest share of the whole call first (RankedDiagnoses)
  double gpu_s = 0;                  ///< wall seconds the profiler held the GPU
};

class NodeProfiler {
 public:
  virtual ~NodeProfiler() = default;
  /// Profiles `candidate`, which `record` measured correct against `bundle`.
  virtual NodeProfile Profile(const Task& task, const TaskBundle& bundle,
                              const Candidate& candidate, const EvalRecord& record) = 0;
};

/// What the real profiler needs besides the node.
struct NodeProfilerConfig {
  Runner* runner = nullptr;    ///< the device and its ceilings, asked when first needed
  std::string gpu = "cuda:0";  ///< the worker's device string
  std::string python = "python3";
  std::filesystem::path repo_root;
  std::filesystem::path cache_dir;
  std::string arch;
  std::filesystem::path data_dir;  ///< thresholds (DiagnoseDataDir())
  int tier = 2;  ///< 1: ncu tier 1 only; 2: plus the sets tier 1's classes ask for
  int calls = 1;
  std::string ncu;  ///< empty: ncu on PATH
  std::function<void(const std::string&)> progress;
};

/// Nsight Compute and cuobjdump in child processes. The loop's workers stay
/// up but idle while it runs: the loop waits for it.
std::unique_ptr<NodeProfiler> MakeProcessNodeProfiler(NodeProfilerConfig config);

/// A ProfileData with its context filled from a measured evaluation: device
/// and ceilings, time per call, the bundle's bytes and FLOPs (the floor).
ProfileData MakeProfileData(const Task& task, const TaskBundle& bundle, const Candidate& candidate,
                            const EvalRecord& record, const DeviceInfo& device,
                            const Ceilings& ceilings, int calls);

/// What ncu profiles of a measured candidate: its build's shared object (a
/// cuda candidate with a build) or its file (a hybrid), with the build as
/// the static tier's object. The caller adds where and how to run it.
ProfileTarget ProfileTargetOf(const Task& task, const Candidate& candidate,
                              const EvalRecord& record, std::vector<BuildResult>* objects);

/// What the run store keeps of a diagnosed profile (no raw CSV or SASS),
/// and the diagnoses in the order the reports read them.
NodeProfile StoredProfileOf(const ProfileData& data, const DiagnosisReport& report);

}  // namespace kopt
