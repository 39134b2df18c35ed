// Global loads touching more 32-byte sectors per request than the access width needs.
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class UncoalescedGlobal : public AnalysisTool {
 public:
  std::string name() const override { return "uncoalesced_global"; }
  bool AppliesTo(BoundClass b) const override {
    return IsMemoryBound(b) || b == BoundClass::kLatency;
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    auto sectors = GetMetric(in.metrics, metric::kGlobalLdSectors);
    auto requests = GetMetric(in.metrics, metric::kGlobalLdRequests);
    if (!sectors || !requests || *requests < in.thresholds->Get(name(), "min_requests")) {
      return std::nullopt;
    }
    // A warp of 32 threads each loading W bytes needs W sectors (32 B each)
    // when coalesced; the width comes from the SASS when we have it.
    double width_bytes = 4;
    if (in.sass && in.sass->mix.global_loads.Total() > 0) {
      const auto& by_bits = in.sass->mix.global_loads.by_bits;
      auto widest = std::max_element(by_bits.begin(), by_bits.end(),
                                     [](auto& a, auto& b) { return a.second < b.second; });
      width_bytes = widest->first / 8.0;
    }
    double per_request = *sectors / *requests;
    double ideal = width_bytes;
    if (per_request <= ideal * in.thresholds->Get(name(), "max_excess")) return std::nullopt;
    Diagnosis d;
    d.evidence = {{metric::kGlobalLdSectors, *sectors},
                  {metric::kGlobalLdRequests, *requests},
                  {"sectors_per_request", per_request},
                  {"ideal_sectors_per_request", ideal}};
    d.estimated_gain = std::min(1 - ideal / per_request, in.thresholds->Get(name(), "max_gain"));
    d.advice = fmt::format(
        "Global loads fetch {:.1f} sectors per request where {:.0f} would do: neighbouring threads "
        "read addresses far apart. Make threadIdx.x walk the contiguous dimension, or stage the "
        "tile through shared memory and read it transposed.",
        per_request, ideal);
    d.suggested_moves = {"coalesce_global_access", "stage_through_shared_memory", "transpose_layout"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeUncoalescedGlobalTool() { return std::make_unique<UncoalescedGlobal>(); }

}  // namespace kopt
