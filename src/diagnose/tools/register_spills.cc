// Registers spilled to local memory (ptxas -v), or heavy local-memory traffic (ncu).
#include <algorithm>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class RegisterSpills : public AnalysisTool {
 public:
  std::string name() const override { return "register_spills"; }
  bool AppliesTo(BoundClass) const override { return true; }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    Diagnosis d;
    double spill_bytes = 0;
    if (in.resources) {
      spill_bytes = static_cast<double>(in.resources->spill_store_bytes + in.resources->spill_load_bytes);
      d.evidence["ptxas_spill_store_bytes"] = static_cast<double>(in.resources->spill_store_bytes);
      d.evidence["ptxas_spill_load_bytes"] = static_cast<double>(in.resources->spill_load_bytes);
      d.evidence["ptxas_stack_bytes"] = static_cast<double>(in.resources->stack_bytes);
      d.evidence["ptxas_registers"] = in.resources->registers;
    }
    double local_sectors = MetricOr(in.metrics, metric::kLocalLdSectors) +
                           MetricOr(in.metrics, metric::kLocalStSectors);
    double global_sectors = MetricOr(in.metrics, metric::kGlobalLdSectors) +
                            MetricOr(in.metrics, metric::kGlobalStSectors);
    double local_fraction = local_sectors > 0 ? local_sectors / (local_sectors + global_sectors) : 0;
    if (local_sectors > 0) d.evidence["local_sector_fraction"] = local_fraction;
    bool spills = spill_bytes > in.thresholds->Get(name(), "max_spill_bytes");
    bool local_heavy = local_fraction > in.thresholds->Get(name(), "max_local_sector_fraction");
    if (!spills && !local_heavy) return std::nullopt;
    d.estimated_gain = std::min(
        std::max(spill_bytes * in.thresholds->Get(name(), "gain_per_spilled_byte"), local_fraction),
        in.thresholds->Get(name(), "max_gain"));
    d.advice = spills
        ? fmt::format("ptxas spills {:.0f} bytes per thread to local memory. Cut live values "
                      "(smaller per-thread tiles, fewer unrolled accumulators), raise the "
                      "register cap (__launch_bounds__ with fewer blocks per SM), or keep the "
                      "array in shared memory.", spill_bytes)
        : fmt::format("{:.0f}% of L1 sectors are local memory: a per-thread array indexed at run "
                      "time lives off-chip. Index it with compile-time constants (unrolled loops) "
                      "or move it to shared memory.", 100 * local_fraction);
    d.suggested_moves = {"reduce_register_pressure", "adjust_launch_bounds", "move_array_to_shared"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeRegisterSpillsTool() { return std::make_unique<RegisterSpills>(); }

}  // namespace kopt
