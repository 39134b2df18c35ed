// One analysis tool's finding on a profile, as a record: what the diagnose
// layer produces, the run store keeps and the reports and proposers read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/metrics.h"

namespace kopt {

/// One finding.
struct Diagnosis {
  std::string tool;
  std::string severity;       ///< "info", "warning" or "critical" (from estimated_gain)
  double estimated_gain = 0;  ///< fraction of the kernel's time it might save, 0..1
  /// The kernel it is about, as ncu names it; "(call)" for call-level tools.
  std::string kernel;
  /// Fraction of the whole call's time it might save, 0..1: estimated_gain
  /// times the kernel's share of the call. What findings are ranked by and
  /// their severity comes from; unset in records from before it existed.
  std::optional<double> call_gain;
  /// call_gain when known, else estimated_gain.
  double CallGain() const { return call_gain.value_or(estimated_gain); }
  Metrics evidence;                          ///< the numbers it is based on, metric -> value
  std::string advice;                        ///< plain English, one or two sentences
  std::vector<std::string> suggested_moves;  ///< short names of code changes
};

/// {tool, severity, estimated_gain, kernel?, call_gain?, evidence, advice, suggested_moves}.
Json ToJson(const Diagnosis& d);
/// A JSON array of ToJson(Diagnosis).
Json ToJson(const std::vector<Diagnosis>& ds);

/// Largest CallGain first (stable).
void SortByCallGain(std::vector<Diagnosis>* ds);

/// Read leniently, field by field: a missing or mistyped field keeps its
/// default (a record from another kopt version is not a crash).
Diagnosis DiagnosisFromJson(const Json& j);

/// The findings in `j`: an array of diagnoses, or a whole diagnosis report
/// as `kopt profile --json` writes it (its "call_diagnoses", then each of its
/// "kernels"' "diagnoses"), in that order. Entries that are not objects are
/// skipped; anything else reads as none.
std::vector<Diagnosis> DiagnosesFromJson(const Json& j);

}  // namespace kopt
