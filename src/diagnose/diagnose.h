// Both stages together: an ncu report and a static report in, findings per kernel out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/json.h"
#include "diagnose/analysis_tool.h"
#include "diagnose/roofline.h"
#include "profile/ncu_csv.h"
#include "profile/static_profile.h"
#include "task/device.h"

namespace kopt {

/// What kopt knows about the call the profile was taken of.
struct ProfileContext {
  DeviceInfo device;
  Ceilings ceilings;
  int calls_profiled = 1;  ///< forward calls the ncu report covers
  double time_ms = 0;      ///< measured per call (CUDA events); 0: unknown
  double host_ms = 0;      ///< host clock per call; 0: unknown
  double min_bytes = 0;    ///< TaskBundle::min_bytes
  double latency_ms =
      0;             ///< TaskBundle::latency_stages x kStageLatencyMs: the call's latency floor
  double flops = 0;  ///< TaskBundle::flops
  double matrix_flops = 0;                           ///< TaskBundle::matrix_flops
  std::map<std::string, double> flops_by_precision;  ///< for the call's floor
  /// The contract's precision ("strict", "tf32", "bf16"; "" unknown) and the
  /// precision of the task's matrix work ("fp32", "fp16", "bf16"): what advice
  /// may suggest (no TF32 under a strict fp32 contract).
  std::string contract_precision;
  std::string matrix_precision;
  // From the timeline tier (PyTorch profiler), per call; negative: not run.
  double gap_ms = -1;     ///< GPU idle between the call's first and last kernel
  double copies = -1;     ///< memcpy operations
  double syncs = -1;      ///< host synchronisations (stream/device sync, blocking copies)
  double launches = -1;   ///< kernel launches
  double kernel_ms = -1;  ///< summed kernel time
};

struct KernelFindings {
  std::string kernel;  ///< as ncu names it
  int launches = 0;    ///< in the report
  double mean_ms = 0;  ///< per launch
  RooflineResult roofline;
  std::vector<Diagnosis> diagnoses;  ///< largest estimated gain first
};

struct DiagnosisReport {
  RooflineResult call;                    ///< the whole call
  std::vector<Diagnosis> call_diagnoses;  ///< launch and host findings
  std::vector<KernelFindings> kernels;    ///< by total time, largest first
  std::vector<std::string> notes;         ///< what was missing
};

/// True when an ncu kernel name and a static kernel are the same function
/// (mangled, demangled, or the same name before the parameter list).
bool SameKernel(const std::string& ncu_name, const StaticKernel& k);

/// Classifies the call and each kernel, then runs the registry's tools: call
/// level tools see only call figures (time, launches), kernel tools see the
/// kernel's merged launches, its SASS and its ptxas resources.
DiagnosisReport DiagnoseProfile(const NcuReport& ncu, const StaticReport& static_report,
                                const ProfileContext& context, const ToolRegistry& registry,
                                const Thresholds& thresholds, const RooflineThresholds& roofline);

Json ToJson(const DiagnosisReport& report);

/// Every finding of the report, call-level and per kernel, largest share of
/// the whole call first (Diagnosis::call_gain).
std::vector<Diagnosis> RankedDiagnoses(const DiagnosisReport& report);

}  // namespace kopt
