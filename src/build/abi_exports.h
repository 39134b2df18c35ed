// Does a built shared object export the kopt ABI? Read from its ELF dynamic
// symbol table, so a comment or a declaration without a definition does not
// count.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kopt {

class Builder;

/// The names of the functions and objects an ELF64 shared object defines
/// and exports (global or weak, not undefined). Empty for a file that is not
/// an ELF64 shared object, with the reason in `*error` when given.
std::vector<std::string> ExportedSymbols(const std::filesystem::path& so,
                                         std::string* error = nullptr);

/// Why `so` is not a kopt candidate ("" when it exports `kopt_forward` with
/// C linkage): it exports no kopt_forward at all, or only a C++-mangled one.
std::string MissingAbiExport(const std::filesystem::path& so);

/// Wraps a builder: every successful build (compiled or cached) is checked
/// with MissingAbiExport, and one that fails it becomes ok=false with the
/// reason appended to its log.
std::unique_ptr<Builder> WithAbiExportCheck(std::unique_ptr<Builder> inner);

}  // namespace kopt
