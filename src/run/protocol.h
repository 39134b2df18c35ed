// The worker's replies as typed values (docs/worker-protocol.md): parsed once,
// where a reply arrives, so the verdict, the evaluator and the reports read
// facts by name instead of JSON by key. JSON stays the wire and file format.
//
// Parsing is lenient exactly as the readers were: a missing or ill-typed
// field is left empty (a missing statistic is not a crash), and replies
// recorded by older workers, without later fields, still parse. Optional
// fields stay optional where "absent" and "zero" mean different things; each
// reader chooses its own fallback.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "task/bundle.h"
#include "task/device.h"

namespace kopt {

// ---------------------------------------------------------------------------
// Pieces shared by several replies

/// Error statistics of one output against a reference (`vs_ref32`,
/// `vs_ref64`, `ref32_vs_ref64`, `reflowp_vs_ref64`, a clean `ref_error`).
struct ErrorStats {
  std::optional<double> max_abs;
  std::optional<double> rel_l2;
  std::optional<double> worst_ratio;    ///< worst |a-b| / (atol + rtol|b|) (vs_ref32 only)
  std::optional<double> ref64_max_abs;  ///< capture's and the clean process's ref_error
};

/// A tensor's fingerprint (python/kopt/fingerprint.py), or the type name of a
/// value that is not a tensor.
struct Fingerprint {
  bool present = false;             ///< an object in the reply ("missing" otherwise)
  std::optional<std::string> type;  ///< set for a value that is not a tensor
  std::vector<long long> shape;
  std::string dtype;
  double numel = 0, nan = 0, inf = 0;
  double sum = 0, abs_sum = 0, sq_sum = 0;  ///< of the finite values, in float64
  std::vector<double> samples;              ///< values at key-drawn positions
};
/// A list of fingerprints; nullopt when the reply has none (not measured).
using Fingerprints = std::optional<std::vector<Fingerprint>>;

/// A check on the contract's second shape: module-level integers overridden.
using SecondShape = std::map<std::string, long long>;

/// One output of one checked call (`evaluate` checks, the timing audit,
/// timed calls checked after the fact).
struct OutputCheck {
  std::optional<std::vector<long long>> shape;      ///< null for a missing output
  std::optional<std::vector<long long>> ref_shape;  ///< the reference output's shape
  std::optional<std::string> dtype;
  bool shape_ok = false;
  bool dtype_ok = false;
  std::optional<bool> exact_tensor;  ///< nullopt: not measured (older worker)
  bool aliases_input = false;
  bool extra = false;  ///< the candidate returned more outputs than the reference
  long long nan = 0, inf = 0;
  long long poison_left = 0;  ///< elements still holding the poison
  std::optional<ErrorStats> vs_ref32, vs_ref64, ref32_vs_ref64, reflowp_vs_ref64;
  std::optional<double> rerun_rel_diff;  ///< seeds[0] only
  std::optional<double> ref_max_abs;
  std::string precision;  ///< set when the contract is not strict
};

/// Operators a hybrid candidate called (contract record_ops).
struct TorchOps {
  std::map<std::string, double> candidate;  ///< name -> calls over all checked forwards
  std::map<std::string, double> reference;  ///< one reference forward
  std::optional<double> candidate_forwards;
};

// ---------------------------------------------------------------------------
// hello

/// The worker's sandbox as it reported it (`--sandbox`).
struct SandboxReport {
  std::optional<std::string> network;     ///< "isolated" or "unavailable: ..."
  std::optional<std::string> filesystem;  ///< "landlock vN" or "unavailable: ..."
  std::optional<std::string> seccomp;
  std::string scratch;
  std::vector<std::string> writable;
  std::vector<std::string> devices;
  std::string order;  ///< "early" or "late"
  std::vector<std::string> details;
};

struct HelloReply {
  DeviceInfo device;  ///< with the torch version
  std::string cuda;   ///< torch.version.cuda; "" when null
  std::string python;
  long long pid = 0;
  std::optional<SandboxReport> sandbox;  ///< nullopt: not sandboxed
};

// ---------------------------------------------------------------------------
// capture

/// Statistics of one reference output for one seed.
struct OutputStats {
  double mean = 0, std = 0, max_abs = 0;
  std::optional<double> numel;
  double nan = 0, inf = 0;
};

/// What capture found on one extra input distribution.
struct CaptureDistribution {
  std::string about;
  bool finite = false;
  bool changes_inputs = false;
  std::string error;
  std::vector<OutputStats> outputs_stats;
};

struct CaptureReply {
  std::vector<TensorSpec> inputs;  ///< ABI order
  std::vector<TensorSpec> outputs;
  int n_forward_inputs = 0;
  bool training = false;
  Json graph = Json::object();  ///< aten-level op graph (kept whole in the bundle)
  double flops = 0;             ///< graph.flops
  double matrix_flops = 0;      ///< graph.flops_by_class.matrix
  double conv_flops = 0;        ///< graph nodes that are convolutions or fused RNNs
  double min_bytes = 0;
  std::vector<ReferenceKernel> kernels;
  Json ref_error;  ///< per output {max_abs, rel_l2, ref64_max_abs} or null (kept whole in the
                   ///< bundle)
  std::vector<std::vector<OutputStats>> outputs_stats;  ///< per seed, per output
  std::vector<std::optional<double>> seed_rel_diff;     ///< per output
  std::vector<std::optional<double>> repeat_rel_diff;   ///< per output
  std::map<std::string, CaptureDistribution> distributions;
  /// Operators seen with no FLOP rule (nullopt: captured before the field existed).
  std::optional<std::vector<std::string>> uncounted_ops;
};

// ---------------------------------------------------------------------------
// evaluate

/// A tensor of state (a parameter or buffer) the reference's forward wrote,
/// BatchNorm's running statistics in training mode: the candidate's copy
/// after its call against the reference's.
struct StateCheck {
  std::string name;
  bool ok = true;
  std::optional<double> max_abs_err;
  bool unchanged = false;  ///< the candidate left it at its starting value
  std::string why;         ///< set when it could not be compared (no such tensor)
  std::string unchecked;   ///< set when a hybrid's state does not mirror Model's
};

struct EvaluateCheck {
  std::optional<long long> seed;
  std::string distribution = "task";
  std::string order;  ///< "candidate_first" or "reference_first"
  bool inputs_mutated = false;
  std::vector<std::string> mutated_inputs;
  std::vector<StateCheck> state;  ///< empty: the reference's forward wrote no state
  std::vector<OutputCheck> outputs;
  std::optional<double> candidate_ms;
  std::optional<SecondShape> second_shape;
  Fingerprints input_fp, ref_fp, ref64_fp;  ///< with a fingerprint key
};

struct EvaluateReply {
  std::vector<EvaluateCheck> checks;
  std::optional<TorchOps> torch_ops;
  std::optional<std::vector<std::string>> tampered;  ///< nullopt: not measured
  std::optional<double> load_ms;
  bool weights_copied = false;
  std::string ref64_failure;
};

// ---------------------------------------------------------------------------
// time

/// One contender's timing samples.
struct ContenderSamples {
  std::vector<double> event_ms;  ///< empty on a CPU worker
  std::vector<double> host_ms;
  std::optional<std::string> error;  ///< set when it could not be set up or failed
  std::string error_kind;
};

/// A timed call checked after it ran.
struct TimedCheck {
  long long call = 0;
  long long input_set = 0;
  std::optional<long long> seed;
  bool inputs_mutated = false;
  std::vector<OutputCheck> outputs;
};

struct TimedContender {
  long long calls = 0;
  std::vector<TimedCheck> checks;
};

/// Why a candidate's timed calls were checked more often.
struct SuspiciousTime {
  double median_ms = 0, floor_ms = 0, fraction = 0, p = 0;
  long long after_calls = 0;
};

struct TimedChecks {
  double p = 0;
  std::optional<SuspiciousTime> suspicious;
  std::map<std::string, TimedContender> contenders;
};

/// The candidate's extra call on a refreshed timed input set.
struct TimingAudit {
  std::optional<long long> seed;
  long long input_set = 0;
  std::vector<OutputCheck> outputs;
};

/// The reference run in the candidate's process after its timed calls.
struct ReferenceProbe {
  std::optional<long long> seed;
  Fingerprints input_fp, ref_fp;
};

struct EnergyReading {
  std::optional<double> mj_per_call;
  long long calls = 0;
  double window_s = 0;
};

struct TimingMeta {
  std::string stop;  ///< ci, max_reps, max_seconds, errors
  long long rounds = 0;
  double elapsed_s = 0;
  std::string clock;  ///< event or host
};

struct TimeReply {
  std::map<std::string, ContenderSamples> samples;
  std::vector<double> null_host_ms;
  std::optional<TimingAudit> timing_audit;
  std::optional<TimedChecks> timed_checks;
  std::optional<std::vector<std::string>> tampered;
  std::optional<ReferenceProbe> ref_probe;
  /// nullopt: not measured; a contender mapped to nullopt failed.
  std::optional<std::map<std::string, std::optional<EnergyReading>>> energy;
  TimingMeta meta;
  std::optional<double> load_ms;
};

// ---------------------------------------------------------------------------
// reference (the clean process)

struct ReferenceCheck {
  std::optional<long long> seed;
  std::string distribution = "task";
  std::optional<SecondShape> second_shape;
  Fingerprints input_fp, ref_fp, ref64_fp;
  /// The fp32 reference's own error per output; nullopt without float64.
  std::optional<std::vector<std::optional<ErrorStats>>> ref_error;
  bool finite = false;
};

struct ReferenceReply {
  std::vector<ReferenceCheck> checks;
};

// ---------------------------------------------------------------------------
// ceilings

struct CeilingProbe {
  std::string probe;                  ///< copy_, fill_, vec_copy, sgemm_fp32, tf32, bf16, ...
  std::string dtype;                  ///< matmul probes
  std::optional<double> bytes_per_s;  ///< bandwidth probes; nullopt: failed
  std::optional<double> flops_per_s;  ///< matmul probes; nullopt: failed
  std::optional<double> tensor_bytes;
  std::optional<double> n;
  std::string error;
};

struct CeilingsReply {
  std::vector<CeilingProbe> bandwidth;
  std::vector<CeilingProbe> matmul;
};

// ---------------------------------------------------------------------------
// Parsing (never throws) and writing back

ErrorStats ParseErrorStats(const Json& j);
Fingerprint ParseFingerprint(const Json& j);
OutputCheck ParseOutputCheck(const Json& j);
SandboxReport ParseSandboxReport(const Json& j);
HelloReply ParseHelloReply(const Json& j);
CaptureReply ParseCaptureReply(const Json& j);
EvaluateReply ParseEvaluateReply(const Json& j);
TimeReply ParseTimeReply(const Json& j);
ReferenceReply ParseReferenceReply(const Json& j);
CeilingsReply ParseCeilingsReply(const Json& j);

Json ToJson(const ErrorStats& s);
Json ToJson(const Fingerprint& f);
Json ToJson(const SandboxReport& s);
Json ToJson(const ReferenceReply& r);
Json ToJson(const CeilingsReply& r);

}  // namespace kopt
