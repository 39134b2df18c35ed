// Expert heuristics as small pluggable tools: each reads a profile and may return one Diagnosis.
//
// How to add a new tool (docs/analysis-tools.md has the long version):
//  1. Write src/diagnose/tools/<name>.cc defining a class derived from
//     AnalysisTool and a factory `std::unique_ptr<AnalysisTool> Make<Name>Tool()`;
//     declare the factory in tools/tools.h and add one line for it to
//     RegisterBuiltinTools() in tools/tools.cc.
//  2. Put every threshold it reads under "<name>" in data/diagnose/thresholds.json
//     and read them with `in.thresholds->Get(name(), "key")`; no numbers in code.
//  3. Add the .cc to SOURCES in src/diagnose/CMakeLists.txt and two tests to
//     tools/tools_test.cc: it fires on a synthetic profile with the flaw and
//     stays quiet on a good one.
// Tools never throw for a missing metric: they return nullopt (no evidence,
// no diagnosis). Only a broken data file throws (kopt::Error).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "build/builder.h"
#include "core/diagnosis.h"
#include "core/json.h"
#include "diagnose/roofline.h"
#include "profile/metrics.h"
#include "profile/sass.h"
#include "task/device.h"

namespace kopt {

/// Tool thresholds from data/diagnose/thresholds.json.
class Thresholds {
 public:
  Thresholds() = default;
  explicit Thresholds(Json data, std::string origin = "thresholds")
      : data_(std::move(data)), origin_(std::move(origin)) {}
  /// The number at data[tool][key]; throws kopt::Error naming the file when
  /// it is missing (a broken data file is an infrastructure failure).
  double Get(const std::string& tool, const std::string& key) const;
  /// "critical" / "warning" / "info" for an estimated gain.
  std::string Severity(double gain) const;
  const Json& data() const { return data_; }

 private:
  Json data_;
  std::string origin_;
};

/// Reads thresholds.json; throws kopt::Error naming the file on failure.
Thresholds LoadThresholds(const std::filesystem::path& path);

/// data/diagnose of the repository: $KOPT_ROOT/data/diagnose, else the first
/// data/diagnose above the executable or the current directory; throws
/// kopt::Error when none is found.
std::filesystem::path DiagnoseDataDir();

/// What a tool sees: one kernel's profile and the call it belongs to.
struct AnalysisInput {
  std::string kernel;
  Metrics metrics;                           ///< ncu, merged over this kernel's launches
  std::optional<SassFunction> sass;          ///< static instruction mix
  std::optional<KernelResources> resources;  ///< ptxas -v
  DeviceInfo device;
  RooflineResult roofline;
  const Thresholds* thresholds = nullptr;  ///< never null when a tool runs
  // The whole call (all kernels of one forward):
  double time_ms = 0;              ///< measured (CUDA events)
  double host_ms = 0;              ///< measured on the host clock with synchronize; 0: unknown
  double kernel_ms = 0;            ///< sum of kernel durations; 0: unknown
  int kernel_launches = 0;         ///< launches per call; 0: unknown
  double min_bytes = 0;            ///< TaskBundle::min_bytes; 0: unknown
  double flops = 0;                ///< all FLOPs of the call
  double matrix_flops = 0;         ///< of which in matrix products / convolutions
  std::string contract_precision;  ///< ProfileContext::contract_precision
  std::string matrix_precision;    ///< ProfileContext::matrix_precision
  // The timeline tier's view of one call; negative: the timeline did not run.
  double gap_ms = -1;  ///< GPU idle between kernels
  double copies = -1;  ///< memcpy operations
  double syncs = -1;   ///< host synchronisations
};

class AnalysisTool {
 public:
  virtual ~AnalysisTool() = default;
  /// snake_case, equal to the file name and the thresholds.json key.
  virtual std::string name() const = 0;
  /// Whether the tool is worth running for a kernel of this class.
  virtual bool AppliesTo(BoundClass bound) const = 0;
  /// A diagnosis when the flaw is there; nullopt when not, or when the
  /// evidence is missing.
  virtual std::optional<Diagnosis> Run(const AnalysisInput& in) const = 0;
};

/// Tools by name.
class ToolRegistry {
 public:
  using Factory = std::function<std::unique_ptr<AnalysisTool>()>;
  /// Adds a tool; throws kopt::Error when the name is taken.
  void Register(const std::string& name, Factory factory);
  std::vector<std::string> Names() const;
  /// nullptr when unknown.
  std::unique_ptr<AnalysisTool> Make(const std::string& name) const;
  std::vector<std::unique_ptr<AnalysisTool>> MakeAll() const;

 private:
  std::map<std::string, Factory> factories_;
};

/// A registry holding every tool under src/diagnose/tools/.
ToolRegistry BuiltinTools();

/// Runs every applicable tool of `registry` on `in`; diagnoses sorted by
/// estimated gain, largest first.
std::vector<Diagnosis> RunTools(const ToolRegistry& registry, const AnalysisInput& in);

/// Fills tool and severity and clamps the gain to [0, 1] (tools call this).
Diagnosis Finish(const AnalysisTool& tool, const AnalysisInput& in, Diagnosis d);

}  // namespace kopt
