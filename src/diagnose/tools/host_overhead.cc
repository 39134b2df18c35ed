// The GPU idles during the call: host code, allocations or synchronizations between kernels.
#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class HostOverhead : public AnalysisTool {
 public:
  std::string name() const override { return "host_overhead"; }
  bool AppliesTo(BoundClass) const override { return true; }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    if (in.time_ms <= 0) return std::nullopt;
    Diagnosis d;
    d.evidence["time_ms"] = in.time_ms;
    bool idle = false, host_slow = false;
    double busy = 1;
    if (in.kernel_ms > 0) {
      busy = in.kernel_ms / in.time_ms;
      d.evidence["kernel_ms"] = in.kernel_ms;
      d.evidence["gpu_busy_fraction"] = busy;
      idle = busy < in.thresholds->Get(name(), "min_gpu_busy_fraction");
    }
    if (in.host_ms > 0) {
      d.evidence["host_ms"] = in.host_ms;
      host_slow = in.host_ms / in.time_ms > in.thresholds->Get(name(), "max_host_over_device");
    }
    if (!idle && !host_slow) return std::nullopt;
    d.estimated_gain = idle ? 1 - busy : 1 - in.time_ms / in.host_ms;
    // What the timeline saw the host doing, when it ran.
    std::string seen;
    if (in.syncs > 0) {
      d.evidence["syncs_per_call"] = in.syncs;
      seen += fmt::format(" The timeline shows {:.0f} host synchronisation(s) per call", in.syncs);
    }
    if (in.copies > 0) {
      d.evidence["copies_per_call"] = in.copies;
      seen += fmt::format("{} {:.0f} memory cop{} per call", seen.empty() ? " The timeline shows" : " and",
                          in.copies, in.copies == 1 ? "y" : "ies");
    }
    if (!seen.empty()) seen += ": each one stops the GPU until the host catches up.";
    d.advice = idle
        ? fmt::format("Kernels keep the GPU busy only {:.0f}% of the call. Remove host work "
                      "between launches: no tensor allocation, .item(), .cpu() or synchronize "
                      "inside forward; precompute constants once; use a CUDA graph.{}", 100 * busy, seen)
        : fmt::format("The call takes {:.3f} ms on the host clock against {:.3f} ms on the GPU: "
                      "Python or launch overhead dominates. Launch fewer, bigger kernels and "
                      "avoid per-call setup.{}", in.host_ms, in.time_ms, seen);
    d.suggested_moves = {"remove_host_sync", "preallocate_outputs", "cuda_graph", "fuse_kernels"};
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeHostOverheadTool() { return std::make_unique<HostOverhead>(); }

}  // namespace kopt
