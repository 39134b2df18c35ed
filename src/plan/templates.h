// The template library (kernels/, one folder per op class): each template is
// a complete cuda candidate whose semantics are set by slot lines
// (`#define KOPT_DIM -1  // slot: ...`) and whose speed by knob lines. See
// kernels/README.md.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kopt {

struct TemplateSlot {
  std::string name;
  long long default_value = 0;
  std::vector<long long> values;  ///< representative values (compile-tested)
  std::string about;
};

struct KernelTemplate {
  std::filesystem::path path;    ///< the .cu
  std::string id;                ///< "scan/scan_lastdim"
  std::string op_class;          ///< "scan", "reduce", "pool", "gemm", ...
  std::vector<std::string> ops;  ///< aten ops it implements
  std::vector<TemplateSlot> slots;
  std::string source;
};

/// Every template listed by a `template.json` under `kernels_dir`, sorted by
/// id; none when the folder does not exist. A malformed manifest throws
/// kopt::Error naming the file.
std::vector<KernelTemplate> LoadTemplates(const std::filesystem::path& kernels_dir);

/// The value on `#define NAME <value>` lines of `source`, by slot name.
std::map<std::string, std::string> SlotValues(const std::string& source);

/// `source` with each named slot's value replaced (nothing else changes).
/// Throws kopt::Error when a slot has no `#define` line.
std::string SetSlots(const std::string& source, const std::map<std::string, long long>& values);

}  // namespace kopt
