// Tensor-core work on an older, slower MMA path than the GPU's own (HMMA from
// mma.sync / WMMA on Hopper, where warpgroup MMA runs at the full rate).
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class SlowMmaPath : public AnalysisTool {
 public:
  std::string name() const override { return "slow_mma_path"; }
  bool AppliesTo(BoundClass b) const override {
    return b != BoundClass::kLaunchHost && b != BoundClass::kSmallGrid;
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    // The SASS decides: it names the MMA instructions the kernel issues. Only
    // the generations whose full-rate path kopt knows are judged: Hopper
    // (sm_90: wgmma, HGMMA/IGMMA/QGMMA) and Blackwell (sm_100: tcgen05, UTC*MMA).
    if (!in.sass || in.sass->mix.tensor_mma == 0) return std::nullopt;
    const InstructionMix& mix = in.sass->mix;
    int full_rate = 0;
    std::string path;
    if (in.device.cc_major == 9) {
      full_rate = mix.warpgroup_mma;
      path = "warpgroup MMA (wgmma, HGMMA in SASS; sm_90a), fed from shared memory by TMA";
    } else if (in.device.cc_major == 10) {
      full_rate = mix.tcgen05_mma;
      path = "tcgen05 MMA (UTC*MMA in SASS; sm_100a), accumulating in tensor memory";
    } else {
      return std::nullopt;
    }
    if (full_rate > 0) return std::nullopt;
    // When the call is one kernel, the task must be mostly matrix work.
    if (in.flops > 0 && in.matrix_flops / in.flops < in.thresholds->Get(name(), "min_matrix_flop_fraction"))
      return std::nullopt;
    Diagnosis d;
    d.evidence["sass_tensor_mma"] = mix.tensor_mma;
    d.evidence["sass_full_rate_mma"] = 0;
    d.evidence["cc_major"] = in.device.cc_major;
    if (auto pipe = GetMetric(in.metrics, metric::kTensorPipePct)) d.evidence[metric::kTensorPipePct] = *pipe;
    // The gain is the distance to the roofline floor (measured ceilings), capped:
    // kopt has no figure of its own for the older path's rate.
    double headroom = in.roofline.headroom;
    if (headroom > 1) d.evidence["headroom"] = headroom;
    d.estimated_gain = std::min(headroom > 1 ? 1 - 1 / headroom : in.thresholds->Get(name(), "default_gain"),
                                in.thresholds->Get(name(), "max_gain"));
    d.advice = fmt::format(
        "The kernel's tensor-core instructions ({} in the SASS) are the older MMA path (mma.sync / WMMA); on "
        "this GPU the full tensor rate needs {}. Rewrite the main loop on that path (CUTLASS 3 / CuTe), or call "
        "cuBLAS(Lt), which uses it.",
        mix.tensor_mma, path);
    d.suggested_moves = {"use_wgmma", "tma_loads", "call_cublas"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeSlowMmaPathTool() { return std::make_unique<SlowMmaPath>(); }

}  // namespace kopt
