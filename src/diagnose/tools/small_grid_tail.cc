// A grid that does not fill the GPU, or whose last wave runs mostly empty.
#include <cmath>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class SmallGridTail : public AnalysisTool {
 public:
  std::string name() const override { return "small_grid_tail"; }
  bool AppliesTo(BoundClass) const override { return true; }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    auto waves = GetMetric(in.metrics, metric::kWaves);
    // ncu prints waves to two decimals: a few blocks read 0.00. Blocks per
    // SM then bound it from above.
    if ((!waves || *waves <= 0) && in.device.sm_count > 0) {
      if (auto grid = GetMetric(in.metrics, metric::kGridSize); grid && *grid > 0) {
        waves = *grid / in.device.sm_count;
      }
    }
    if (!waves || *waves <= 0) return std::nullopt;
    Diagnosis d;
    d.evidence[metric::kWaves] = *waves;
    if (auto grid = GetMetric(in.metrics, metric::kGridSize)) d.evidence[metric::kGridSize] = *grid;
    if (in.device.sm_count > 0) d.evidence["sm_count"] = in.device.sm_count;
    if (*waves < in.thresholds->Get(name(), "min_waves")) {
      d.estimated_gain = 1 - *waves;
      d.advice = fmt::format(
          "The grid fills {:.0f}% of one wave: SMs sit idle. Split the work finer (smaller tiles, "
          "split-K, more blocks per row) so there are at least as many blocks as SMs times "
          "resident blocks per SM.", 100 * *waves);
      d.suggested_moves = {"split_work_finer", "split_k", "smaller_tiles"};
      return Finish(*this, in, std::move(d));
    }
    double efficiency = *waves / std::ceil(*waves);
    d.evidence["tail_efficiency"] = efficiency;
    if (*waves > in.thresholds->Get(name(), "max_waves_for_tail") ||
        efficiency >= in.thresholds->Get(name(), "min_tail_efficiency")) {
      return std::nullopt;
    }
    d.estimated_gain = 1 - efficiency;
    d.advice = fmt::format(
        "{:.2f} waves: the last wave runs {:.0f}% full, so {:.0f}% of the SM time is idle. Pick "
        "a tile size that makes the block count a multiple of the resident blocks, or use a "
        "persistent kernel with a tile scheduler.",
        *waves, 100 * (*waves - std::floor(*waves)), 100 * (1 - efficiency));
    d.suggested_moves = {"retile_for_full_waves", "persistent_kernel"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeSmallGridTailTool() { return std::make_unique<SmallGridTail>(); }

}  // namespace kopt
