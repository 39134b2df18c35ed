#include "diagnose/tiers.h"

#include <algorithm>

#include "core/error.h"
#include "core/json.h"

namespace kopt {
namespace {

std::vector<std::string> Strings(const Json& j, const std::string& what, const std::filesystem::path& path) {
  if (!j.is_array()) throw Error(path.string() + ": `" + what + "` must be a list of metric names");
  std::vector<std::string> out;
  for (const auto& v : j) {
    if (!v.is_string()) throw Error(path.string() + ": `" + what + "` must hold metric names only");
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

TierMetrics LoadTierMetrics(const std::filesystem::path& path) {
  Json j = ReadJsonFile(path);
  if (!j.is_object() || !j.contains("tier1") || !j.contains("tier2") || !j["tier2"].is_object()) {
    throw Error(path.string() + " must hold `tier1` (a list) and `tier2` (class -> list)");
  }
  TierMetrics t;
  t.tier1 = Strings(j["tier1"], "tier1", path);
  for (const auto& [cls, list] : j["tier2"].items()) t.tier2[cls] = Strings(list, "tier2." + cls, path);
  return t;
}

std::vector<std::string> Tier2Metrics(const TierMetrics& tiers, const std::set<BoundClass>& classes) {
  std::vector<std::string> out;
  auto add = [&](const std::string& key) {
    auto it = tiers.tier2.find(key);
    if (it == tiers.tier2.end()) return;
    for (const auto& m : it->second) {
      if (std::find(tiers.tier1.begin(), tiers.tier1.end(), m) != tiers.tier1.end()) continue;
      if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
    }
  };
  add("always");
  for (BoundClass c : classes) add(BoundClassName(c));
  return out;
}

void MergeNcuReports(NcuReport* base, const NcuReport& extra) {
  std::map<std::string, std::vector<const NcuKernel*>> by_name;
  for (const auto& k : extra.kernels) by_name[k.name].push_back(&k);
  std::map<std::string, size_t> seen;
  for (auto& k : base->kernels) {
    size_t i = seen[k.name]++;
    auto it = by_name.find(k.name);
    if (it == by_name.end() || i >= it->second.size()) continue;
    const NcuKernel& e = *it->second[i];
    for (const auto& [m, v] : e.metrics) k.metrics.emplace(m, v);
    for (const auto& [m, u] : e.units) k.units.emplace(m, u);
    for (const auto& [m, t] : e.text) k.text.emplace(m, t);
  }
  base->warnings.insert(base->warnings.end(), extra.warnings.begin(), extra.warnings.end());
}

}  // namespace kopt
