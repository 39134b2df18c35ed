// Threads of a warp taking different paths, so each instruction runs with lanes masked off.
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class WarpDivergence : public AnalysisTool {
 public:
  std::string name() const override { return "warp_divergence"; }
  bool AppliesTo(BoundClass b) const override {
    return b != BoundClass::kLaunchHost && b != BoundClass::kMemoryDram;
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    auto threads = GetMetric(in.metrics, metric::kThreadsPerInst);
    auto uniform = GetMetric(in.metrics, metric::kBranchUniformPct);
    if (!threads && !uniform) return std::nullopt;
    // Threads per instruction decides when ncu gave it. Branch uniformity is
    // 0 for a kernel with no divergent-capable branch at all (H200 recording),
    // so alone it counts only when positive.
    bool low_threads = threads && *threads < in.thresholds->Get(name(), "min_threads_per_inst");
    bool low_uniform = !threads && uniform && *uniform > 0 &&
                       *uniform < in.thresholds->Get(name(), "min_branch_uniform_pct");
    if (!low_threads && !low_uniform) return std::nullopt;
    Diagnosis d;
    if (threads) d.evidence[metric::kThreadsPerInst] = *threads;
    if (uniform) d.evidence[metric::kBranchUniformPct] = *uniform;
    double lost = threads ? 1 - *threads / 32 : 1 - *uniform / 100;
    d.estimated_gain = std::min(lost, in.thresholds->Get(name(), "max_gain"));
    d.advice = fmt::format(
        "{}Branches split warps. Make the condition uniform per warp (assign work so a warp's "
        "32 threads take the same path), turn short branches into selects, and handle "
        "boundaries with a separate tail block instead of per-thread checks.",
        threads ? fmt::format("On average {:.1f} of 32 threads are active per instruction. ", *threads) : "");
    d.suggested_moves = {"warp_uniform_work", "branchless_select", "separate_tail_handling"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeWarpDivergenceTool() { return std::make_unique<WarpDivergence>(); }

}  // namespace kopt
