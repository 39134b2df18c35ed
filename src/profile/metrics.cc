#include "profile/metrics.h"

namespace kopt {

std::optional<double> GetMetric(const Metrics& m, const std::string& name) {
  auto it = m.find(name);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

double MetricOr(const Metrics& m, const std::string& name, double fallback) {
  return GetMetric(m, name).value_or(fallback);
}

std::optional<double> FirstMetric(const Metrics& m, const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (auto v = GetMetric(m, n)) return v;
  }
  return std::nullopt;
}

std::optional<double> MetricRatio(const Metrics& m, const std::string& numerator,
                                  const std::string& denominator) {
  auto num = GetMetric(m, numerator);
  auto den = GetMetric(m, denominator);
  if (!num || !den || *den <= 0) return std::nullopt;
  return *num / *den;
}

std::optional<double> SumMetrics(const Metrics& m, const std::string& prefix,
                                 const std::string& suffix) {
  std::optional<double> total;
  for (auto it = m.lower_bound(prefix); it != m.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    const std::string& name = it->first;
    if (name.size() < prefix.size() + suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    total = total.value_or(0) + it->second;
  }
  return total;
}

void AccumulateMetrics(Metrics* into, const Metrics& from, double weight) {
  static const std::string kSum = ".sum";
  for (const auto& [name, value] : from) {
    bool counter = name.size() >= kSum.size() &&
                   name.compare(name.size() - kSum.size(), kSum.size(), kSum) == 0;
    (*into)[name] += counter ? value : value * weight;
  }
}

const std::vector<std::string>& StallReasons() {
  static const std::vector<std::string> kReasons = {
      "long_scoreboard", "short_scoreboard",   "barrier",
      "membar",          "mio_throttle",       "lg_throttle",
      "tex_throttle",    "math_pipe_throttle", "wait",
      "not_selected",    "selected",           "dispatch_stall",
      "drain",           "branch_resolving",   "no_instruction",
      "imc_miss",        "sleeping",           "misc"};
  return kReasons;
}

const std::vector<std::string>& KoptNcuMetrics() {
  static const std::vector<std::string> kList = [] {
    std::vector<std::string> list = {metric::kDuration,
                                     metric::kSmThroughputPct,
                                     metric::kMemThroughputPct,
                                     metric::kDramBytes,
                                     metric::kDramBytesRead,
                                     metric::kDramBytesWrite,
                                     metric::kDramThroughputPct,
                                     metric::kL2ThroughputPct,
                                     metric::kL2HitRatePct,
                                     metric::kL2Bytes,
                                     metric::kL1ThroughputPct,
                                     metric::kL1HitRatePct,
                                     metric::kGlobalLdSectors,
                                     metric::kGlobalLdRequests,
                                     metric::kGlobalStSectors,
                                     metric::kGlobalStRequests,
                                     metric::kLocalLdSectors,
                                     metric::kLocalStSectors,
                                     metric::kSharedLdConflicts,
                                     metric::kSharedStConflicts,
                                     metric::kSharedLdWavefronts,
                                     metric::kSharedStWavefronts,
                                     metric::kAchievedOccupancyPct,
                                     metric::kTheoreticalOccupancyPct,
                                     metric::kOccLimitRegisters,
                                     metric::kOccLimitSharedMem,
                                     metric::kOccLimitWarps,
                                     metric::kOccLimitBlocks,
                                     metric::kRegistersPerThread,
                                     metric::kGridSize,
                                     metric::kBlockSize,
                                     metric::kWaves,
                                     metric::kTensorHmmaInst,
                                     metric::kTensorGmmaInst,
                                     metric::kTensorPipePct,
                                     metric::kFmaPipePct,
                                     metric::kXuPipePct,
                                     metric::kFfmaThreadInst,
                                     metric::kFaddThreadInst,
                                     metric::kFmulThreadInst,
                                     metric::kThreadsPerInst,
                                     metric::kBranchUniformPct};
    for (const auto& r : StallReasons()) {
      list.push_back(std::string(metric::kStallPrefix) + r + metric::kStallSuffix);
    }
    return list;
  }();
  return kList;
}

}  // namespace kopt
