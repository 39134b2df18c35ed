// Transcendentals (exp, log, rsqrt, division) crowding the special-function unit.
#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class SpecialFunctionOverhead : public AnalysisTool {
 public:
  std::string name() const override { return "special_function_overhead"; }
  bool AppliesTo(BoundClass b) const override { return !IsMemoryBound(b) || b == BoundClass::kMemoryL1Shared; }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    Diagnosis d;
    bool fires = false;
    if (auto xu = GetMetric(in.metrics, metric::kXuPipePct)) {
      d.evidence[metric::kXuPipePct] = *xu;
      fires = *xu >= in.thresholds->Get(name(), "min_xu_pipe_pct");
    } else if (in.sass) {
      const InstructionMix& mix = in.sass->mix;
      int float_ops = mix.ffma + mix.fadd + mix.fmul + mix.mufu;
      if (float_ops == 0) return std::nullopt;
      double fraction = static_cast<double>(mix.mufu) / float_ops;
      d.evidence["sass_mufu"] = mix.mufu;
      d.evidence["sass_mufu_fraction"] = fraction;
      fires = fraction >= in.thresholds->Get(name(), "min_mufu_fraction");
    } else {
      return std::nullopt;
    }
    if (!fires) return std::nullopt;
    d.estimated_gain = in.thresholds->Get(name(), "gain");
    d.advice =
        "Special functions (MUFU: exp2, log2, rsqrt, reciprocal, sin/cos) dominate the math. "
        "Use the fast intrinsics (__expf, exp2f with a pre-scaled argument, __frcp_rn, rsqrtf), "
        "compute each transcendental once and reuse it, and replace divisions by multiplying "
        "with a reciprocal.";
    d.suggested_moves = {"fast_math_intrinsics", "exp2_prescale", "reuse_transcendentals"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeSpecialFunctionOverheadTool() {
  return std::make_unique<SpecialFunctionOverhead>();
}

}  // namespace kopt
