// Shared-memory accesses replayed because threads of a warp hit the same bank.
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class BankConflicts : public AnalysisTool {
 public:
  std::string name() const override { return "bank_conflicts"; }
  bool AppliesTo(BoundClass b) const override {
    return b == BoundClass::kMemoryL1Shared || b == BoundClass::kLatency ||
           b == BoundClass::kComputeTensor || b == BoundClass::kComputeFp32;
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    auto ld = GetMetric(in.metrics, metric::kSharedLdConflicts);
    auto st = GetMetric(in.metrics, metric::kSharedStConflicts);
    auto ld_w = GetMetric(in.metrics, metric::kSharedLdWavefronts);
    auto st_w = GetMetric(in.metrics, metric::kSharedStWavefronts);
    if ((!ld && !st) || (!ld_w && !st_w)) return std::nullopt;
    double conflicts = ld.value_or(0) + st.value_or(0);
    double wavefronts = ld_w.value_or(0) + st_w.value_or(0);
    if (wavefronts < in.thresholds->Get(name(), "min_wavefronts")) return std::nullopt;
    double per_wavefront = conflicts / wavefronts;
    if (per_wavefront <= in.thresholds->Get(name(), "max_conflicts_per_wavefront")) return std::nullopt;
    Diagnosis d;
    d.evidence = {{"shared_bank_conflicts", conflicts},
                  {"shared_wavefronts", wavefronts},
                  {"conflicts_per_wavefront", per_wavefront}};
    if (ld) d.evidence[metric::kSharedLdConflicts] = *ld;
    if (st) d.evidence[metric::kSharedStConflicts] = *st;
    d.estimated_gain = std::min(per_wavefront, in.thresholds->Get(name(), "max_gain"));
    d.advice = fmt::format(
        "{:.0f}% of shared-memory wavefronts are bank-conflict replays. Pad the tile's row "
        "(e.g. [32][33] instead of [32][32]) or XOR-swizzle the column index so a warp's "
        "threads fall in different banks.",
        100 * per_wavefront);
    d.suggested_moves = {"pad_shared_tile", "swizzle_shared_layout"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeBankConflictsTool() { return std::make_unique<BankConflicts>(); }

}  // namespace kopt
