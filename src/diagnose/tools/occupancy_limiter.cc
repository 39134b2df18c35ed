// Low achieved occupancy on a kernel that needs warps to hide latency, and what limits it.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class OccupancyLimiter : public AnalysisTool {
 public:
  std::string name() const override { return "occupancy_limiter"; }
  bool AppliesTo(BoundClass b) const override {
    return b == BoundClass::kLatency || IsMemoryBound(b);
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    auto achieved = GetMetric(in.metrics, metric::kAchievedOccupancyPct);
    double min_pct = in.thresholds->Get(name(), "min_achieved_pct");
    if (!achieved || *achieved >= min_pct) return std::nullopt;
    Diagnosis d;
    d.evidence[metric::kAchievedOccupancyPct] = *achieved;
    // More warps help only a kernel whose warps wait on memory latency. With
    // the stall reasons at hand, that wait must be a real share of the stall
    // cycles: on the H200 a tiled WMMA GEMM at 24% occupancy (by design: big
    // tiles, few warps) stalled 12% on long scoreboard, a kernel made
    // occupancy-limited by a shared-memory hog 66%.
    double total = 0, waiting = -1;
    for (const auto& reason : StallReasons()) {
      if (reason == "selected" || reason == "not_selected") continue;
      auto v = GetMetric(in.metrics, std::string(metric::kStallPrefix) + reason + metric::kStallSuffix);
      if (!v) continue;
      total += *v;
      if (reason == "long_scoreboard") waiting = *v;
    }
    if (total > 0 && waiting >= 0) {
      d.evidence["long_scoreboard_share"] = waiting / total;
      if (waiting / total < in.thresholds->Get(name(), "min_latency_stall_share")) return std::nullopt;
    }
    // The resource allowing the fewest blocks per SM is the limiter.
    const std::pair<const char*, const char*> kLimits[] = {
        {metric::kOccLimitRegisters, "registers"},
        {metric::kOccLimitSharedMem, "shared memory"},
        {metric::kOccLimitWarps, "block size (warps)"},
        {metric::kOccLimitBlocks, "blocks per SM"}};
    std::string limiter = "unknown (the occupancy-limit metrics were not collected)";
    double fewest = std::numeric_limits<double>::max();
    for (const auto& [metric_name, what] : kLimits) {
      if (auto v = GetMetric(in.metrics, metric_name)) {
        d.evidence[metric_name] = *v;
        if (*v < fewest) {
          fewest = *v;
          limiter = what;
        }
      }
    }
    if (auto theo = GetMetric(in.metrics, metric::kTheoreticalOccupancyPct)) {
      d.evidence[metric::kTheoreticalOccupancyPct] = *theo;
    }
    if (auto regs = GetMetric(in.metrics, metric::kRegistersPerThread)) {
      d.evidence[metric::kRegistersPerThread] = *regs;
    }
    d.estimated_gain = std::min((min_pct - *achieved) / 100, in.thresholds->Get(name(), "max_gain"));
    d.advice = fmt::format(
        "Only {:.0f}% of warp slots are occupied and the kernel waits on latency; the limiter is "
        "{}. Free that resource (fewer registers via __launch_bounds__, less shared memory per "
        "block, different block size) or give each thread more independent work (ILP) instead.",
        *achieved, limiter);
    if (limiter == "registers") {
      d.suggested_moves = {"adjust_launch_bounds", "reduce_register_pressure"};
    } else if (limiter == "shared memory") {
      d.suggested_moves = {"shrink_shared_tile", "reduce_pipeline_stages"};
    } else {
      d.suggested_moves = {"change_block_size", "increase_ilp"};
    }
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeOccupancyLimiterTool() { return std::make_unique<OccupancyLimiter>(); }

}  // namespace kopt
