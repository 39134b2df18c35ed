// DRAM bandwidth saturated: only moving fewer bytes can help.
#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class DramAtRoof : public AnalysisTool {
 public:
  std::string name() const override { return "dram_at_roof"; }
  bool AppliesTo(BoundClass b) const override { return b == BoundClass::kMemoryDram; }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    auto pct = GetMetric(in.metrics, metric::kDramThroughputPct);
    if (!pct || *pct < in.thresholds->Get(name(), "min_dram_pct")) return std::nullopt;
    Diagnosis d;
    d.evidence[metric::kDramThroughputPct] = *pct;
    auto bytes = GetMetric(in.metrics, metric::kDramBytes);
    if (bytes) d.evidence[metric::kDramBytes] = *bytes;
    double excess = 0;
    if (bytes && in.min_bytes > 0) {
      d.evidence["min_bytes"] = in.min_bytes;
      excess = 1 - in.min_bytes / *bytes;
    }
    if (excess > in.thresholds->Get(name(), "min_excess_bytes_fraction")) {
      d.estimated_gain = excess;
      d.advice = fmt::format(
          "DRAM runs at {:.0f}% of peak but moves {:.1f}x the bytes the task needs. Read each "
          "input once (fuse the passes, keep intermediates in registers or shared memory) and "
          "write only the outputs.",
          *pct, 1 / (1 - excess));
      d.suggested_moves = {"fuse_passes", "keep_intermediates_on_chip", "single_pass_algorithm"};
    } else if (bytes && in.min_bytes > 0) {
      d.estimated_gain = 0;
      d.advice = fmt::format(
          "DRAM runs at {:.0f}% of peak moving about what the task needs: this kernel is at its "
          "floor. Only a narrower data type or fusing it with a neighbour would help.",
          *pct);
      d.suggested_moves = {"fuse_with_neighbour", "narrower_dtype"};
    } else {
      // One kernel of several: what the task needs of its bytes is not known
      // here (the call's excess_traffic finding compares the whole call).
      d.estimated_gain = 0;
      d.advice = fmt::format(
          "DRAM runs at {:.0f}% of peak: this kernel is bandwidth-bound, so it is as fast as the "
          "bytes it moves allow. Moving fewer (fusing it with the kernels around it, a narrower "
          "data type) is what would help.",
          *pct);
      d.suggested_moves = {"fuse_with_neighbour", "narrower_dtype"};
    }
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeDramAtRoofTool() { return std::make_unique<DramAtRoof>(); }

}  // namespace kopt
