// Global memory moved in 32-bit (or narrower) instructions where 128-bit ones would do (SASS).
#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class NarrowLoads : public AnalysisTool {
 public:
  std::string name() const override { return "narrow_loads"; }
  bool AppliesTo(BoundClass b) const override {
    return IsMemoryBound(b) || b == BoundClass::kLatency;
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    if (!in.sass) return std::nullopt;
    const InstructionMix& mix = in.sass->mix;
    int total = mix.global_loads.Total() + mix.global_stores.Total();
    if (total < in.thresholds->Get(name(), "min_memory_instructions")) return std::nullopt;
    // Tensor-core kernels load through shared memory and TMA; their
    // remaining scalar global accesses are epilogue details.
    if (mix.tensor_mma > 0 || mix.async_copies > 0) return std::nullopt;
    int wide = mix.global_loads.AtLeast(128) + mix.global_stores.AtLeast(128);
    double wide_fraction = static_cast<double>(wide) / total;
    if (wide_fraction >= in.thresholds->Get(name(), "min_wide_fraction")) return std::nullopt;
    Diagnosis d;
    d.evidence = {{"sass_global_memory_instructions", static_cast<double>(total)},
                  {"sass_128bit_instructions", static_cast<double>(wide)},
                  {"wide_fraction", wide_fraction}};
    for (const auto& [bits, n] : mix.global_loads.by_bits) {
      d.evidence["sass_ldg_" + std::to_string(bits) + "bit"] = n;
    }
    d.estimated_gain = in.thresholds->Get(name(), "gain");
    d.advice = fmt::format(
        "Only {} of {} global load/store instructions are 128-bit. Load float4 (or int4 / "
        "8 x bf16) per thread from 16-byte-aligned addresses, with a scalar tail for the "
        "remainder, so each instruction moves four times the data.",
        wide, total);
    d.suggested_moves = {"vectorize_loads_128bit", "align_pointers_16b"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeNarrowLoadsTool() { return std::make_unique<NarrowLoads>(); }

}  // namespace kopt
