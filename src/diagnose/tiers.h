// Which ncu metrics each profiling tier asks for (data/diagnose/tiers.json),
// and how two tiers' reports of the same program become one.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "diagnose/roofline.h"
#include "profile/ncu_csv.h"

namespace kopt {

struct TierMetrics {
  std::vector<std::string> tier1;
  std::map<std::string, std::vector<std::string>> tier2;  ///< class name (or "always") -> metrics
};

/// Reads tiers.json; throws kopt::Error naming the file when it is broken.
TierMetrics LoadTierMetrics(const std::filesystem::path& path);

/// Tier 2's list for the classes tier 1 found: "always", then each class's
/// set, without the metrics tier 1 already has; no duplicates.
std::vector<std::string> Tier2Metrics(const TierMetrics& tiers, const std::set<BoundClass>& classes);

/// Adds `extra`'s metrics to the matching launches of `base` (the k-th
/// launch of a kernel name in one to the k-th of the same name in the other);
/// `base`'s values win. Launches `extra` lacks keep what they had.
void MergeNcuReports(NcuReport* base, const NcuReport& extra);

}  // namespace kopt
