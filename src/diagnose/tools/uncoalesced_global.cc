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
    // Loads and stores each: a warp of 32 threads each moving W bytes needs W
    // sectors (32 B each) per request when coalesced; W comes from the SASS
    // when we have it. The worse of the two is reported.
    struct Side {
      const char* what;
      const char* sectors_metric;
      const char* requests_metric;
      const WidthCounts* widths;
    };
    const Side sides[] = {
        {"loads", metric::kGlobalLdSectors, metric::kGlobalLdRequests,
         in.sass ? &in.sass->mix.global_loads : nullptr},
        {"stores", metric::kGlobalStSectors, metric::kGlobalStRequests,
         in.sass ? &in.sass->mix.global_stores : nullptr}};
    const Side* worst = nullptr;
    double worst_excess = 0, per_request = 0, ideal = 0, sectors = 0, requests = 0;
    for (const Side& side : sides) {
      auto s = GetMetric(in.metrics, side.sectors_metric);
      auto r = GetMetric(in.metrics, side.requests_metric);
      if (!s || !r || *r < in.thresholds->Get(name(), "min_requests")) continue;
      // Without the SASS the width is unknown: assume the widest (16 B), so
      // only access patterns no width explains are reported.
      // With it, the widest access the kernel issues: the static counts do
      // not say which instruction runs most (on the H200 a float4 ReLU with
      // one scalar tail load, 1 LDG.128 and 1 LDG.32, was called uncoalesced
      // when the tie picked the scalar width).
      double width_bytes = 16;
      if (side.widths && side.widths->Total() > 0) {
        for (auto it = side.widths->by_bits.rbegin(); it != side.widths->by_bits.rend(); ++it)
          if (it->second > 0) {
            width_bytes = it->first / 8.0;
            break;
          }
      }
      double excess = (*s / *r) / width_bytes;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = &side;
        per_request = *s / *r;
        ideal = width_bytes;
        sectors = *s;
        requests = *r;
      }
    }
    if (!worst || worst_excess <= in.thresholds->Get(name(), "max_excess")) return std::nullopt;
    Diagnosis d;
    d.evidence = {{worst->sectors_metric, sectors},
                  {worst->requests_metric, requests},
                  {"sectors_per_request", per_request},
                  {"ideal_sectors_per_request", ideal}};
    d.estimated_gain = std::min(1 - ideal / per_request, in.thresholds->Get(name(), "max_gain"));
    d.advice = fmt::format(
        "Global {} touch {:.1f} sectors per request where {:.0f} would do: neighbouring threads "
        "access addresses far apart. Make threadIdx.x walk the contiguous dimension, or stage the "
        "tile through shared memory and access it transposed.",
        worst->what, per_request, ideal);
    d.suggested_moves = {"coalesce_global_access", "stage_through_shared_memory", "transpose_layout"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeUncoalescedGlobalTool() { return std::make_unique<UncoalescedGlobal>(); }

}  // namespace kopt
