// TaskBundle: everything capture learned about a task's reference.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/outcome.h"
#include "core/stats.h"
#include "core/task.h"
#include "task/device.h"

namespace kopt {

struct TensorSpec {
  std::string name;
  std::string role;   ///< input, param, buffer, scalar, output
  std::string dtype;  ///< torch name without the prefix: float32, bfloat16, ...
  std::vector<long long> shape;
  std::vector<long long> strides;
  long long Numel() const;
};

/// A tensor of a signature or a bundle file ("torch." dtype prefixes dropped).
TensorSpec TensorSpecFromJson(const Json& j, const std::string& default_role);
Json ToJson(const TensorSpec& t);

/// Bytes per element of a dtype name (float32 -> 4).
double DtypeBytes(const std::string& dtype);

struct ReferenceKernel {
  std::string name;
  double calls = 0;      ///< per forward call
  double device_ms = 0;  ///< per forward call
};

/// Names of the degeneracy and semantics flags capture can raise.
namespace flags {
inline constexpr const char* kNearZero = "near_zero_output";
inline constexpr const char* kNearConstant = "near_constant_output";
inline constexpr const char* kSeedIndependent = "seed_independent_output";
inline constexpr const char* kStochastic = "stochastic_reference";
inline constexpr const char* kNoFp64 = "no_float64_reference";
}  // namespace flags

/// What capture learned about one extra input distribution (kopt.inputs).
struct DistributionFacts {
  std::string about;            ///< how the inputs are made, in words
  bool finite = false;          ///< the reference's outputs stay finite there
  bool changes_inputs = false;  ///< the task has floating-point inputs to transform
  std::string error;            ///< the reference raised on such inputs
  bool varies = true;           ///< its outputs are neither near zero nor near constant
};

struct TaskBundle {
  std::string task_name;
  std::string task_path;
  std::string task_hash;  ///< content hash of the task file
  DeviceInfo device;

  std::vector<TensorSpec> inputs;  ///< ABI order: forward tensors, params, buffers
  std::vector<TensorSpec> outputs;
  int n_forward_inputs = 0;
  bool training = false;

  double flops = 0;
  double matrix_flops = 0;
  double min_bytes = 0;  ///< every ABI input read once, every output written once
  Json graph;            ///< aten-level op graph with shapes and FLOPs
  /// Operators the reference ran that no FLOP rule covers (they count as 0
  /// FLOPs, so the floor may be low); operators that do no arithmetic
  /// (views, copies, fills, allocation, data movement) are not listed.
  /// Absent: captured before kopt listed them.
  std::optional<std::vector<std::string>> uncounted_ops;
  std::vector<ReferenceKernel> kernels;
  Json ref_error;  ///< per output: fp32 reference vs float64

  /// Extra input distributions by name ("signed", "wide"), as capture found
  /// the reference on them; empty for bundles captured before they existed.
  std::map<std::string, DistributionFacts> distributions;

  std::vector<std::string> flags;       ///< see kopt::flags
  std::vector<std::string> flag_notes;  ///< plain-English explanation per flag

  /// The reference algorithm's roofline floor: every input, parameter and
  /// output moved once, and its FLOPs at the fastest rate PyTorch's default
  /// precision allows. A faster kernel changed the algorithm (fewer FLOPs,
  /// pre-transformed weights); that is allowed, so this is for headroom only.
  double floor_ms = 0;
  std::string floor_bound;  ///< "memory", "compute" or "latency"
  /// What no implementation can beat: the forward's tensor inputs read once
  /// and its outputs written once, at the measured bandwidth. Times below
  /// this are rejected as impossible.
  double hard_floor_ms = 0;
  double conv_flops = 0;  ///< cuDNN convolution and fused-RNN FLOPs (fp32 runs in TF32 by default)
  /// Dependent steps no implementation can run concurrently (LatencyStages);
  /// the floor is at least this many kStageLatencyMs.
  int latency_stages = 0;

  std::optional<SampleSummary> eager_ms;
  std::optional<SampleSummary> compile_ms;
  std::string compile_error;  ///< why torch.compile could not be timed

  bool HasFlag(const std::string& f) const;
  /// True when some flag means a trivial kernel could pass: such a task
  /// cannot certify candidates.
  bool Degenerate() const;
};

/// A measurement's speedups over eager PyTorch and torch.compile: its own
/// baselines (Measured::EagerMs, CompileMs), else the task's captured ones
/// (the in-process timing may leave torch.compile out). Every table, report
/// and the loop use these.
std::optional<double> SpeedupVsEager(const Measured& m, const TaskBundle& b);
std::optional<double> SpeedupVsCompile(const Measured& m, const TaskBundle& b);

/// Thresholds for the degeneracy checks (data, not control flow).
struct DegeneracyThresholds {
  double near_zero_max_abs = 1e-6;      ///< every output element below this
  double near_constant_rel_std = 1e-6;  ///< std / max(|mean|, max_abs) below this
  double seed_independent_rel_diff = 1e-7;
  double stochastic_rel_diff = 0;  ///< repeat difference above this
};

/// Which extra input distributions a candidate is checked on, and why the
/// others are not (docs/verification.md, "Input distributions").
struct DistributionPlan {
  std::vector<std::string> checked;
  std::vector<std::pair<std::string, std::string>> skipped;  ///< name, why
};

/// The contract's distributions (nullopt: all known) that the bundle says the
/// task is defined on.
DistributionPlan PlanDistributions(const TaskBundle& b,
                                   const std::optional<std::vector<std::string>>& wanted);

/// One line: "the task's inputs, signed, wide (not: ... reference not finite)".
std::string DescribeDistributions(const DistributionPlan& plan);

/// The data type the task computes in: a 16-bit input's type if there is
/// one, else the first output's ("float32" for an empty signature).
std::string ComputeDtype(const TaskBundle& b);

/// The task's FLOPs by the precision the floor charges them at: matrix work
/// in the compute type ("fp16", "bf16", else "fp32": strict fp32 matrix
/// products run on CUDA cores), convolutions at TF32 in fp32 tasks (cuDNN's
/// default), the rest in "fp32". For kopt profile's roofline.
std::map<std::string, double> FlopsByPrecision(const TaskBundle& b);

/// The roofline floor: the larger of min_bytes over bandwidth and FLOPs over
/// the fastest rate the task's dtype allows (fp32 convolutions at the TF32
/// rate, as cuDNN runs them by default; other fp32 matrix products at the
/// faster of the CUDA cores' rate and a third of the TF32 rate, split-
/// precision 3xTF32). `bound` receives which one won.
double FloorMs(double min_bytes, double matrix_flops, double conv_flops, double other_flops,
               const std::string& dtype, const Ceilings& ceilings, std::string* bound);

/// The least time one dependent step costs on a GPU: a grid-wide barrier
/// (a persistent kernel's sync, or the gap between two kernels in a CUDA
/// graph) is about a microsecond on Hopper-class parts.
inline constexpr double kStageLatencyMs = 0.001;

/// The longest chain of dependent steps in a captured op graph (the bundle's
/// `graph` JSON): each matrix op (GEMM, convolution) needs all of its input
/// before any output, so a chain of them cannot overlap; a recurrent layer
/// (cuDNN RNN, aten lstm/gru/rnn) is one step per time step per layer.
/// Elementwise ops and reductions fuse into their neighbours and add none.
/// 0 for an empty or unreadable graph.
int LatencyStages(const Json& graph);

Json ToJson(const TaskBundle& b);
TaskBundle BundleFromJson(const Json& j);

}  // namespace kopt
