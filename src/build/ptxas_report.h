// Reading per-kernel resource usage out of nvcc/ptxas `-Xptxas -v` output.
#pragma once

#include <string>
#include <vector>

#include "build/builder.h"

namespace kopt {

/// One entry per "Compiling entry function" line, in log order (a kernel
/// compiled for two architectures appears twice). Stack and spill sizes come
/// from the "Function properties" block of the same name, registers, shared
/// and constant memory from the "Used N registers, ..." line. Non-entry
/// (device) functions and lines it does not know are ignored, so any log,
/// including one with compiler errors, parses without failing.
std::vector<KernelResources> ParsePtxasReport(const std::string& log);

/// The C++ name for a mangled one (`abi::__cxa_demangle`); the input itself
/// when it is not a mangled name (extern "C" kernels).
std::string Demangle(const std::string& mangled);

}  // namespace kopt
