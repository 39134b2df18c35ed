// Matrix work done on CUDA cores (FFMA) where tensor cores would be several times faster.
#include <fmt/format.h>

#include "diagnose/tools/tools.h"

namespace kopt {
namespace {

class NoTensorCores : public AnalysisTool {
 public:
  std::string name() const override { return "no_tensor_cores"; }
  bool AppliesTo(BoundClass b) const override {
    return b == BoundClass::kComputeFp32 || b == BoundClass::kLatency ||
           b == BoundClass::kMemoryL1Shared;
  }
  std::optional<Diagnosis> Run(const AnalysisInput& in) const override {
    if (in.flops <= 0 ||
        in.matrix_flops / in.flops < in.thresholds->Get(name(), "min_matrix_flop_fraction")) {
      return std::nullopt;
    }
    Diagnosis d;
    d.evidence["matrix_flop_fraction"] = in.matrix_flops / in.flops;
    // The SASS is the ground truth: on the H200 the executed-HMMA counter is
    // not zero for kernels with no MMA at all (one per warp in a plain copy,
    // tests/data/ncu/h200_raw_page.csv), so the counter is only read without
    // SASS, and then as a share of the FFMA work.
    double ffma = 0;
    if (in.sass) {
      if (in.sass->mix.tensor_mma > 0) return std::nullopt;
      d.evidence["sass_tensor_mma"] = 0;
      d.evidence["sass_ffma"] = in.sass->mix.ffma;
    } else if (auto hmma = GetMetric(in.metrics, metric::kTensorHmmaInst)) {
      double tensor = *hmma + MetricOr(in.metrics, metric::kTensorGmmaInst);
      double executed = MetricOr(in.metrics, metric::kFfmaThreadInst);
      // Warp-level tensor instructions against thread-level FFMAs / 32.
      if (tensor > in.thresholds->Get(name(), "max_tensor_per_ffma_warp_inst") * executed / 32) {
        return std::nullopt;
      }
      d.evidence[metric::kTensorHmmaInst] = *hmma;
    } else {
      return std::nullopt;
    }
    // How much FFMA work: executed (ncu) when known, else the static count in
    // the code (a loop body holds far fewer instructions than it executes).
    if (auto executed = GetMetric(in.metrics, metric::kFfmaThreadInst)) {
      ffma = *executed;
      d.evidence[metric::kFfmaThreadInst] = ffma;
      if (ffma < in.thresholds->Get(name(), "min_ffma_instructions")) return std::nullopt;
    } else {
      ffma = in.sass ? in.sass->mix.ffma : 0;
      if (ffma < in.thresholds->Get(name(), "min_sass_ffma")) return std::nullopt;
    }
    d.estimated_gain = in.thresholds->Get(name(), "gain");
    if (in.matrix_precision == "fp32" && in.contract_precision == "strict") {
      // Advice must respect the contract: plain TF32 would break it.
      d.advice =
          "The task is mostly fp32 matrix products, run as FFMA on CUDA cores, and its contract is "
          "strict fp32, so plain TF32 is not allowed. Two routes keep fp32 accuracy: "
          "split-precision "
          "3xTF32 on tensor cores (each operand as a TF32 part plus its residual, three MMAs per "
          "product; about twice SGEMM's rate on the H200), or tiling the FFMA work: stage tiles of "
          "both operands in shared memory and give each thread a block of outputs in registers, so "
          "every value loaded feeds many FMAs.";
      d.suggested_moves = {"split_tf32x3_tensor_cores", "smem_register_tiling", "call_cublas_fp32"};
    } else if (in.matrix_precision == "fp32" &&
               (in.contract_precision == "tf32" || in.contract_precision == "bf16")) {
      d.advice = fmt::format(
          "The task is mostly fp32 matrix products but the kernel runs them as FFMA on CUDA cores, "
          "and its contract allows {} operands. Use tensor cores: wgmma (sm_90a), mma.sync or "
          "WMMA (sm_80+), or cuBLAS, with {} inputs.",
          in.contract_precision == "tf32" ? "TF32" : "bf16",
          in.contract_precision == "tf32" ? "TF32" : "bf16");
      d.suggested_moves = {"use_wgmma", "use_tensor_cores_mma_sync", "call_cublas",
                           in.contract_precision == "tf32" ? "tf32_inputs" : "bf16_inputs"};
    } else {
      d.advice =
          "The task is mostly matrix products but the kernel runs them as FFMA on CUDA cores. Use "
          "tensor cores: WMMA or mma.sync (sm_80+), wgmma (sm_90a) or cuBLAS; TF32 for fp32 "
          "inputs where the task's contract allows it, bf16/fp16 where the inputs already are.";
      d.suggested_moves = {"use_tensor_cores_mma_sync", "use_wgmma", "call_cublas", "tf32_inputs"};
    }
    return Finish(*this, in, std::move(d));
  }
};

}  // namespace

std::unique_ptr<AnalysisTool> MakeNoTensorCoresTool() { return std::make_unique<NoTensorCores>(); }

}  // namespace kopt
