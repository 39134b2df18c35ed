// Data fetched from DRAM repeatedly because tiles are not reused while they sit in L2.
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class PoorL2Reuse : public AnalysisTool {
 public:
  std::string name() const override { return "poor_l2_reuse"; }
  bool AppliesTo(BoundClass b) const override {
    return IsMemoryBound(b) || b == BoundClass::kLatency;
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    auto hit = GetMetric(in.metrics, metric::kL2HitRatePct);
    if (!hit || *hit >= in.thresholds->Get(name(), "max_l2_hit_pct")) return std::nullopt;
    Diagnosis d;
    d.evidence[metric::kL2HitRatePct] = *hit;
    // Re-reads show only against the bytes the task needs: a streaming kernel
    // misses in L2 as much as one that re-reads, so without min_bytes (one
    // kernel of several) the tool has no evidence and stays quiet; the call's
    // excess_traffic finding speaks for the whole call then.
    auto bytes = GetMetric(in.metrics, metric::kDramBytes);
    if (!bytes || in.min_bytes <= 0) return std::nullopt;
    double over = *bytes / in.min_bytes;
    d.evidence[metric::kDramBytes] = *bytes;
    d.evidence["dram_over_min_bytes"] = over;
    if (over < in.thresholds->Get(name(), "min_dram_over_min_bytes")) return std::nullopt;
    d.estimated_gain = std::min(1 - 1 / over, in.thresholds->Get(name(), "max_gain"));
    d.advice = fmt::format(
        "Only {:.0f}% of L2 lookups hit, so blocks re-read the same data from DRAM. Order the "
        "blocks so neighbours share tiles (grouped / swizzled rasterization), make tiles larger, "
        "or keep reused operands in shared memory.",
        *hit);
    d.suggested_moves = {"swizzle_block_order", "larger_tiles", "l2_persistence_window"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakePoorL2ReuseTool() { return std::make_unique<PoorL2Reuse>(); }

}  // namespace kopt
