// One candidate's profile across the tiers: collecting it through the
// Profiler seam, keeping it on disk (kopt profile --save / --replay), and
// diagnosing it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "build/builder.h"
#include "core/json.h"
#include "diagnose/diagnose.h"
#include "diagnose/tiers.h"
#include "profile/profiler.h"

namespace kopt {

/// Everything one profile produced; also what --save writes and --replay reads.
struct ProfileData {
  std::string task_name, candidate_name, candidate_kind;
  ProfileContext context;
  std::vector<KernelResources> resources;
  std::string sass_text;
  std::string ncu_tier1, ncu_tier2;
  std::string ncu_source;             ///< the champion kernel's source page (--source)
  Json timeline;                      ///< null when not run
  Json outcome;                       ///< the evaluation's verdict
  std::map<std::string, double> tier_seconds;
  std::vector<std::string> notes;
};

Json ToJson(const ProfileContext& c);
ProfileContext ProfileContextFromJson(const Json& j);

/// Writes profile.json, sass.txt, ncu_tier1.csv and ncu_tier2.csv into `dir`.
void SaveProfile(const ProfileData& d, const std::filesystem::path& dir);
/// Reads a folder SaveProfile wrote; throws kopt::Error (one sentence) when
/// it is not one.
ProfileData LoadProfile(const std::filesystem::path& dir);

/// Classification and diagnoses from what was collected (pure): the tier-2
/// CSV merged into tier 1's launches, the SASS and ptxas resources, the
/// thresholds in `data_dir`.
DiagnosisReport DiagnoseProfileData(const ProfileData& d, const std::filesystem::path& data_dir);

Json ToJson(const ProfileData& d, const DiagnosisReport& r);

struct TierOptions {
  int tier = 2;                  ///< 1: tier 1 only; 2: plus the class-chosen sets
  bool one_pass = false;         ///< tier 1 and every class's tier 2 in one ncu run
  std::string timeline = "auto"; ///< auto (hybrids, multi-kernel calls), on, off
  bool hybrid = false;           ///< the candidate is a ModelNew file
  int timeline_calls = 20;
  int max_launches = 10;         ///< launches per call ncu profiles; more are counted by the timeline
  bool source = false;           ///< source-level counters of the kernel taking the most time
  std::function<void(const std::string&)> progress;
};

/// Runs the tiers on `target` through `profiler` and fills `d`: ncu tier 1
/// (or the one pass), the static tier on `objects` and on every shared object
/// a hybrid loaded, the timeline when asked for, and tier 2 with the sets of
/// the classes tier 1 found, and (options.source) the source-level counters
/// of the kernel that takes the most time. Wall seconds of each land in d->tier_seconds.
/// Throws kopt::Error when tier 1 fails; later tiers' failures are notes.
void RunProfileTiers(Profiler& profiler, const ProfileTarget& target, std::vector<BuildResult> objects,
                     const TierOptions& options, const std::filesystem::path& data_dir, ProfileData* d);

}  // namespace kopt
