// A call made of many short launches: launch cost and lost fusion dominate.
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class ManySmallKernels : public AnalysisTool {
 public:
  std::string name() const override { return "many_small_kernels"; }
  bool AppliesTo(BoundClass) const override { return true; }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    if (in.kernel_launches <= in.thresholds->Get(name(), "max_launches") || in.kernel_ms <= 0 ||
        in.time_ms <= 0) {
      return std::nullopt;
    }
    double mean_us = in.kernel_ms * 1e3 / in.kernel_launches;
    if (mean_us >= in.thresholds->Get(name(), "max_mean_kernel_us")) return std::nullopt;
    Diagnosis d;
    d.evidence = {{"kernel_launches", static_cast<double>(in.kernel_launches)},
                  {"mean_kernel_us", mean_us},
                  {"time_ms", in.time_ms}};
    // The gaps the timeline measured between the call's kernels, else the
    // modelled launch cost of each extra launch; plus the intermediate traffic
    // fusion removes, which only the fused kernel would show.
    double launch_ms =
        (in.kernel_launches - 1) * in.thresholds->Get(name(), "launch_cost_us") / 1e3;
    if (in.gap_ms >= 0) {
      launch_ms = in.gap_ms;
      d.evidence["gap_ms_per_call"] = in.gap_ms;
    }
    // What the call could really save: the gaps (fusing the kernels removes
    // them), never the kernels' own time.
    double saved_ms = std::max(0.0, std::min(launch_ms, in.time_ms - in.kernel_ms));
    d.evidence["saved_ms_per_call"] = saved_ms;
    d.estimated_gain = std::clamp(saved_ms / in.time_ms, 0.0, 1.0);
    if (d.estimated_gain <= 0) return std::nullopt;
    d.advice = fmt::format(
        "One call launches {} kernels averaging {:.1f} us each. Fuse them into one kernel (the "
        "intermediates then never touch DRAM), or at least capture the sequence in a CUDA graph.",
        in.kernel_launches, mean_us);
    d.suggested_moves = {"fuse_kernels", "cuda_graph"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeManySmallKernelsTool() {
  return std::make_unique<ManySmallKernels>();
}

}  // namespace kopt
