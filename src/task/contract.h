// The per-task contract: what a candidate may do (precision, torch operators)
// and what else it must be correct on (a second input shape).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/task.h"

namespace kopt {

/// The arithmetic a candidate may use for an fp32 task (docs/verification.md,
/// "Contract"). Reduced precision is never silent: only a contract allows it.
enum class Precision {
  kStrict,  ///< fp32 throughout; the calibrated float64 tolerance
  kTf32,    ///< matrix-op operands may be rounded to TF32 (10-bit mantissa)
  kBf16,    ///< matrix-op operands may be rounded to bf16 (7-bit mantissa)
};

const char* PrecisionName(Precision p);

struct Contract {
  Precision precision = Precision::kStrict;
  /// May the candidate call torch compute operators (and so the reference
  /// Model)? Allocation, view, copy and fill operators are always allowed.
  bool torch_ops = true;
  /// Module-level integer globals of the task file to override for a second
  /// check (e.g. batch_size=8193); empty: no second shape.
  std::map<std::string, long long> second_shape;
  /// Input distributions besides get_inputs()'s own that a candidate must be
  /// right on too ("signed", "wide"; docs/verification.md, "Input
  /// distributions"). nullopt: every one on which capture found the reference
  /// defined (finite). A contract narrows it where inputs carry meaning a
  /// transformation would break (e.g. [] for probabilities or labels).
  std::optional<std::vector<std::string>> distributions;
  /// Libraries a candidate may call besides the CUDA runtime ("cublas",
  /// "cublaslt", "cudnn", "cutlass"); the default: all of them.
  std::vector<std::string> libraries = KnownLibraries();
  /// May a candidate transform parameters once (kopt_init) and reuse the
  /// result on every call? nullopt: not said; `kopt optimize` infers it after
  /// capture (no op of the forward writes a parameter or buffer).
  std::optional<bool> pre_transform_weights;
  /// Training-mode semantics in words ("batch statistics: ..."); empty
  /// until inferred or said by a contract file.
  std::string training;
  /// What was inferred from the captured task, and why; one line each.
  std::vector<std::string> inferred;
  /// Where it came from: "default", a file path, and/or "command line".
  std::string source = "default";

  static std::vector<std::string> KnownLibraries() {
    return {"cublas", "cublaslt", "cudnn", "cutlass"};
  }
};

/// `<task dir>/<task stem>.contract.json`: the optional file beside a task.
std::filesystem::path ContractPath(const Task& task);

/// The extra input distributions kopt knows ("signed", "wide").
const std::vector<std::string>& KnownDistributions();

/// Parses a contract object: {"precision": "strict"|"tf32"|"bf16",
/// "torch_ops": true|false, "second_shape": {"NAME": INT, ...},
/// "distributions": ["signed", "wide"]}. Every key is
/// optional; an unknown key or a bad value throws kopt::Error naming `where`.
Contract ContractFromJson(const Json& j, const std::string& where);

/// The task's contract: its contract file when there is one, else defaults.
Contract LoadContract(const Task& task);

/// What `kopt eval` / `kopt bench` options say about the contract.
struct ContractOverrides {
  std::string file;       ///< a contract file used instead of the task's
  std::string precision;  ///< "" keeps the file's
  bool forbid_torch_ops = false;
  bool allow_torch_ops = false;
  std::vector<std::string> second_shape;  ///< NAME=VALUE, repeatable
  std::string distributions;              ///< "auto", "none" or a comma list; "" keeps the file's
  bool Empty() const;
};

/// The task's contract (or overrides.file's) with the command-line overrides
/// applied on top. Throws kopt::Error, one sentence, for a bad option.
Contract ResolveContract(const Task& task, const ContractOverrides& overrides);

/// Applies command-line overrides to a contract (no file is read).
Contract ApplyOverrides(Contract base, const ContractOverrides& overrides);

Json ToJson(const Contract& c);

/// One line for `kopt eval`: "precision strict (fp32); torch operators
/// allowed; second shape batch_size=8193".
std::string DescribeContract(const Contract& c);

/// True for operators a torch-ops-forbidding contract still allows:
/// allocation, views and metadata, copies, fills (`aten::empty_like`,
/// `aten::view`, `aten::copy_`, ...). Everything else in the `aten` and
/// `prims` namespaces computes.
bool IsStructuralTorchOp(const std::string& aten_name);

/// True for an operator of torch itself (`aten::`, `prims::`); operators a
/// candidate registers in its own namespace are its own kernels.
bool IsTorchOp(const std::string& name);

}  // namespace kopt
