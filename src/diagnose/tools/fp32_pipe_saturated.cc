// The FP32 FMA pipe is the roof: fewer or fused instructions, or another pipe, is the way out.
#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class Fp32PipeSaturated : public AnalysisTool {
 public:
  std::string name() const override { return "fp32_pipe_saturated"; }
  bool AppliesTo(BoundClass b) const override {
    return b == BoundClass::kComputeFp32 || b == BoundClass::kLatency;
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    auto pct = GetMetric(in.metrics, metric::kFmaPipePct);
    if (!pct || *pct < in.thresholds->Get(name(), "min_fma_pipe_pct")) return std::nullopt;
    Diagnosis d;
    d.evidence[metric::kFmaPipePct] = *pct;
    double ffma = MetricOr(in.metrics, metric::kFfmaThreadInst);
    double fadd = MetricOr(in.metrics, metric::kFaddThreadInst);
    double fmul = MetricOr(in.metrics, metric::kFmulThreadInst);
    double all = ffma + fadd + fmul;
    double unfused = all > 0 ? (fadd + fmul) / all : 0;
    if (all > 0) d.evidence["unfused_fraction"] = unfused;
    // Saturated with fused math is the roof itself: reported at the small
    // `at_roof_gain` (info), so only wasteful instruction mixes rank high.
    bool wasteful = unfused >= in.thresholds->Get(name(), "min_unfused_fraction");
    d.estimated_gain = in.thresholds->Get(name(), wasteful ? "gain" : "at_roof_gain");
    if (wasteful) {
      d.advice = fmt::format(
          "The FMA pipe is {:.0f}% busy and {:.0f}% of float instructions are separate FADD/FMUL. "
          "Write a*b+c as fmaf (or let the compiler fuse: no -fmad=false), hoist invariant "
          "products, and use packed half2/bfloat162 math where precision allows.",
          *pct, 100 * unfused);
      d.suggested_moves = {"fuse_multiply_add", "hoist_invariants", "packed_half2_math"};
    } else {
      d.advice = fmt::format(
          "The FMA pipe is {:.0f}% busy: the kernel is at the CUDA-core roof. Only fewer FLOPs "
          "(algebra, reuse) or tensor cores make it faster.", *pct);
      d.suggested_moves = {"reduce_flops", "use_tensor_cores_mma_sync"};
    }
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeFp32PipeSaturatedTool() { return std::make_unique<Fp32PipeSaturated>(); }

}  // namespace kopt
