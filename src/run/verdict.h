// The verdict policy: raw worker facts in, correct-or-not and timing out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/outcome.h"
#include "core/stats.h"
#include "run/protocol.h"
#include "task/bundle.h"
#include "task/contract.h"

namespace kopt {

enum class TolerancePolicy {
  /// Error against a float64 evaluation of the reference must stay within a
  /// multiple of the fp32 reference's own error (never fails a kernel for
  /// being more accurate than a TF32 reference).
  kCalibrated,
  /// KernelBench's rule: allclose against the fp32 reference, atol = rtol =
  /// 1e-4 for fp32 and 1e-2 for 16-bit types.
  kKernelBench,
};

/// Verification thresholds (data, not control flow; see docs/verification.md).
struct VerifyPolicy {
  TolerancePolicy tolerance = TolerancePolicy::kCalibrated;
  double reference_error_multiple = 5;  ///< allowed multiple of the reference's own error
  double dtype_eps_multiple = 64;       ///< floor on the allowance, in units of the dtype's epsilon
  double floor_margin = 0.10;           ///< a time below floor·(1 − margin) is impossible
  double host_gap_ms = 0.1;             ///< host-clock excess over events that draws a warning
  double host_gap_fraction = 0.5;       ///< ... when also above this fraction of the event time
                                        ///< (only where the worker measured no null call)
  /// Host time (less the null call's) beyond the event time that is judged as
  /// work hidden from the timed stream: more than max(fraction·events, ms).
  double hidden_work_fraction = 0.10;
  double hidden_work_ms = 0.020;
  /// Timed calls judged after the fact (docs/verification.md, "Timed
  /// calls"): the chance each timed call of every contender is checked, and
  /// the chance for a candidate timed below `suspicious_fraction` of the
  /// reference algorithm's floor.
  double timed_check_p = 0.05;
  double suspicious_check_p = 0.25;
  double suspicious_fraction = 0.5;
  /// Eager timed beside the candidate slower than in a clean process by more
  /// than this fraction: the candidate changed the reference. Host-clock
  /// timings (CPU workers) are noisier and get the second value.
  /// Both the fraction and the absolute excess must be exceeded: calls of a
  /// few microseconds are launch-bound and read 2-5x apart between two
  /// processes (host load, clock ramp after idle), and speedups use the
  /// faster median anyway, so this rule only has to catch gross interference
  /// (sleeps, busy waits, a saturated device).
  double reference_slowdown = 0.25;
  double reference_slowdown_ms = 0.1;
  double reference_slowdown_host = 1.0;
  double reference_slowdown_host_ms = 0.5;
};

/// What a clean worker (a process where no candidate code ever ran) says
/// about the reference; verdicts rest on it (docs/verification.md, "The
/// reference, checked clean").
struct CleanFacts {
  ReferenceReply reference;               ///< fingerprints and the reference's own error per check
  std::optional<SampleSummary> eager_ms;  ///< eager timed there, this session
  std::optional<SampleSummary> compile_ms;  ///< torch.compile timed there, this session
  bool host_clock = false;                  ///< timings are host-clock (CPU worker)
};

Json ToJson(const CleanFacts& c);
CleanFacts CleanFactsFromJson(const Json& j);

/// "" when two tensor fingerprints (kopt/fingerprint.py) agree within
/// `rel_tol`, else what differs.
std::string FingerprintDifference(const Fingerprint& mine, const Fingerprint& clean,
                                  double rel_tol);
std::string FingerprintDifference(const Json& mine, const Json& clean, double rel_tol);

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};

/// KernelBench's tolerance for an output dtype.
Tolerance KernelBenchTolerance(const std::string& dtype);

/// Machine epsilon of a dtype name (float32, bfloat16, float16, float64).
double DtypeEpsilon(const std::string& dtype);

/// The reason a reply's `tampered` list (functions the candidate replaced)
/// gives, or "" when the list is absent or empty.
std::string TamperReason(const std::optional<std::vector<std::string>>& tampered);
std::string TamperReason(const Json& reply);

/// Judges an `evaluate` reply's checks under the task's contract (its
/// precision widens the calibrated allowance; a torch-ops-forbidding
/// contract judges the reply's `torch_ops`; a second-shape check is named as
/// such). Returns the reasons the candidate is wrong, most important first;
/// empty means correct.
/// With `clean`, each check's reference (inputs, fp32 and float64 outputs)
/// must match the clean process's, and the clean process's own reference
/// error sets the allowance.
std::vector<std::string> JudgeChecks(const EvaluateReply& evaluate_reply, const TaskBundle& bundle,
                                     const VerifyPolicy& policy, const Contract& contract = {},
                                     const CleanFacts* clean = nullptr);
/// The same on a reply as it came over the wire or out of a record.
std::vector<std::string> JudgeChecks(const Json& evaluate_reply, const TaskBundle& bundle,
                                     const VerifyPolicy& policy, const Contract& contract = {},
                                     const CleanFacts* clean = nullptr);

/// The reason a torch-ops-forbidding contract gives for the reply's
/// `torch_ops` (operators the candidate called), or "" when none computes.
std::string TorchOpsReason(const EvaluateReply& evaluate_reply, const Contract& contract);
std::string TorchOpsReason(const Json& evaluate_reply, const Contract& contract);

/// Turns a `time` reply into Measured (medians, intervals, speedups,
/// energy), or Incorrect when the time is physically impossible, a timed call
/// chosen for checking was wrong, or (with `clean`) the reference beside the
/// candidate ran slower or computed otherwise than in a clean process.
Outcome JudgeTiming(const TimeReply& time_reply, const TaskBundle& bundle,
                    const VerifyPolicy& policy, const Contract& contract = {},
                    const CleanFacts* clean = nullptr);
/// The same on a reply as it came over the wire or out of a record.
Outcome JudgeTiming(const Json& time_reply, const TaskBundle& bundle, const VerifyPolicy& policy,
                    const Contract& contract = {}, const CleanFacts* clean = nullptr);

}  // namespace kopt
