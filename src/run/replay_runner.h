// A Runner that answers from recorded evaluations instead of a GPU: the loop,
// the search and the commands run end to end on any machine, and a run made
// on an H200 can be replayed (and re-judged with today's verdict policy)
// where there is none.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "run/runner.h"

namespace kopt {

class RunStore;

/// What a replay runner knows: the device and ceilings, captured tasks, and
/// evaluation records keyed by the candidate's source hash.
struct ReplayData {
  DeviceInfo device;
  Ceilings ceilings;
  std::map<std::string, TaskBundle> bundles;  ///< by task name
  std::map<std::string, EvalRecord> records;  ///< by ContentHash({source})
  /// Judge recorded worker replies again with the caller's policy and
  /// contract (true), or return each recorded outcome as it was.
  bool rejudge = true;
};

/// From `kopt eval --json` / `kopt bench --json` result files (records that
/// carry a source hash; older ones are skipped).
ReplayData ReplayFromResultFiles(const std::vector<std::filesystem::path>& files);

/// From a run in the run store: every task's bundle and every recorded
/// evaluation, so the same search can be replayed without a GPU.
ReplayData ReplayFromRun(const RunStore& store, const std::string& run_id);

/// Evaluate() on a candidate with no record is Crashed{"replay", ...}; a task
/// with no bundle throws kopt::Error.
std::unique_ptr<Runner> MakeReplayRunner(ReplayData data);

}  // namespace kopt
