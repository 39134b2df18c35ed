// The dominant reason warps cannot issue, with the remedy for that reason.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

struct Remedy {
  const char* advice;
  std::vector<std::string> moves;
};

const std::map<std::string, Remedy>& Remedies() {
  static const std::map<std::string, Remedy> kRemedies = {
      {"long_scoreboard",
       {"warps wait on global or local memory. Prefetch further ahead (software pipelining, "
        "cp.async / TMA multi-stage buffers), load more independent values per thread, or raise "
        "occupancy", {"software_pipelining", "async_copy_multistage", "increase_ilp"}}},
      {"short_scoreboard",
       {"warps wait on shared memory or special-function results. Remove bank conflicts, reuse "
        "values in registers, and interleave independent MUFU work",
        {"register_blocking", "pad_shared_tile"}}},
      {"barrier",
       {"warps wait at __syncthreads. Balance work between warps, use fewer barriers (warp "
        "shuffles for reductions), or split producer and consumer warps",
        {"warp_shuffle_reduction", "warp_specialization"}}},
      {"mio_throttle",
       {"the memory-input/output queue is full (shared memory, shuffles, special functions). "
        "Use wider shared accesses (LDS.128, ldmatrix) and fewer, larger instructions",
        {"vectorize_shared_access", "use_ldmatrix"}}},
      {"lg_throttle",
       {"the local/global queue is full of small requests. Vectorize global accesses and remove "
        "local-memory traffic", {"vectorize_loads_128bit", "reduce_register_pressure"}}},
      {"math_pipe_throttle",
       {"a math pipe is saturated. Move work to an idle pipe (tensor cores, FP16x2) or cut "
        "instructions", {"use_tensor_cores", "reduce_instruction_count"}}},
      {"wait",
       {"warps wait on fixed-latency dependencies. Interleave independent instructions "
        "(unroll with separate accumulators)", {"increase_ilp", "unroll_independent_accumulators"}}},
      {"membar",
       {"warps wait on memory fences. Drop unneeded __threadfence / atomics with fences",
        {"remove_fences"}}},
      {"branch_resolving",
       {"warps wait on branch targets. Replace data-dependent branches with predication or "
        "select", {"branchless_select"}}},
      {"no_instruction",
       {"the instruction cache misses. Reduce unrolling or code size", {"reduce_unrolling"}}},
      {"dispatch_stall",
       {"the dispatcher stalls. Check for register bank conflicts or overuse of one pipe",
        {"reduce_instruction_count"}}},
      {"tex_throttle",
       {"the texture unit queue is full. Use plain global loads instead of __ldg-only paths or "
        "textures", {"vectorize_loads_128bit"}}},
      {"drain",
       {"warps wait for their stores to drain at exit. Write less, or write wider",
        {"vectorize_stores"}}},
      {"imc_miss",
       {"constant-cache misses: the kernel reads __constant__ data with per-thread indices, or more of it than "
        "the SM's small constant cache holds (a few KB). Stage large coefficient tables in shared memory or "
        "registers, and keep per-thread indices out of __constant__ arrays",
        {"stage_constants_in_shared_memory", "move_constants_to_registers"}}},
      {"sleeping", {"warps sleep (nanosleep / yield). Remove spin-waits", {"remove_spin_wait"}}},
  };
  return kRemedies;
}

class WarpStalls : public AnalysisTool {
 public:
  std::string name() const override { return "warp_stalls"; }
  bool AppliesTo(BoundClass b) const override {
    return b == BoundClass::kLatency || b == BoundClass::kMemoryL1Shared || b == BoundClass::kMemoryL2 ||
           b == BoundClass::kMemoryDram || b == BoundClass::kComputeFp32 || b == BoundClass::kComputeTensor;
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    // Cycles per issued instruction by reason; else PC-sampling counts.
    std::map<std::string, double> by_reason;
    for (const auto& reason : StallReasons()) {
      std::string ratio = std::string(metric::kStallPrefix) + reason + metric::kStallSuffix;
      if (auto v = GetMetric(in.metrics, ratio)) {
        by_reason[reason] = *v;
      } else if (auto s = GetMetric(in.metrics, std::string(metric::kPcSampStallPrefix) + reason)) {
        by_reason[reason] = *s;
      }
    }
    // "selected" is issuing, "not_selected" means enough eligible warps.
    by_reason.erase("selected");
    by_reason.erase("not_selected");
    double total = 0;
    for (const auto& [r, v] : by_reason) total += v;
    if (by_reason.empty() || total <= 0) return std::nullopt;
    // Under a DRAM or L2 roof, waiting on memory is the roof itself (every
    // streaming kernel on the H200 shows long-scoreboard stalls), and so is
    // waiting at the barriers a shared-memory tile needs (the padded
    // transpose: 27% barrier). Only a reason the roof does not explain is
    // reported there (a fence after every store: 40% membar at 80% of DRAM).
    const bool memory_roof = in.roofline.bound == BoundClass::kMemoryDram || in.roofline.bound == BoundClass::kMemoryL2;
    auto explained_by_roof = [](const std::string& r) {
      return r == "long_scoreboard" || r == "lg_throttle" || r == "drain" || r == "barrier";
    };
    auto top = by_reason.end();
    for (auto it = by_reason.begin(); it != by_reason.end(); ++it) {
      if (memory_roof && explained_by_roof(it->first)) continue;
      if (top == by_reason.end() || it->second > top->second) top = it;
    }
    if (top == by_reason.end()) return std::nullopt;
    double share = top->second / total;
    if (share < in.thresholds->Get(name(), memory_roof ? "min_share_under_memory_roof" : "min_top_share"))
      return std::nullopt;
    bool ratios = GetMetric(in.metrics, std::string(metric::kStallPrefix) + top->first +
                                            metric::kStallSuffix).has_value();
    if (ratios && top->second < in.thresholds->Get(name(), "min_stall_cycles_per_issue")) {
      return std::nullopt;
    }
    auto remedy = Remedies().find(top->first);
    if (remedy == Remedies().end()) return std::nullopt;
    Diagnosis d;
    for (const auto& [r, v] : by_reason) d.evidence["stall_" + r] = v;
    d.evidence["top_stall_share"] = share;
    d.estimated_gain = std::min(share * in.thresholds->Get(name(), "gain_per_share"),
                                in.thresholds->Get(name(), "max_gain"));
    d.advice = fmt::format("{:.0f}% of stalls are '{}': {}.", 100 * share, top->first,
                           remedy->second.advice);
    d.suggested_moves = remedy->second.moves;
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeWarpStallsTool() { return std::make_unique<WarpStalls>(); }

}  // namespace kopt
