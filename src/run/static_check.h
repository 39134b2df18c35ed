// The static layer of contract enforcement: what a hybrid's source says it
// calls. An extra layer only; the worker's operator recording is the
// mechanism (docs/verification.md, "Contract").
#pragma once

#include <string>
#include <vector>

#include "core/task.h"
#include "task/bundle.h"
#include "task/contract.h"

namespace kopt {

/// Python source with comments and string literals blanked (same length,
/// newlines kept), so names in docstrings and embedded CUDA sources are not
/// mistaken for calls.
std::string PythonCodeOnly(const std::string& source);

/// Reasons a hybrid candidate's source breaks a contract that forbids torch
/// operators: it constructs the task's `Model`, or calls a torch function of
/// an operator the reference uses (`torch.relu(`, `F.gelu(`), by the
/// reference's operator graph in `bundle`. Empty when the contract allows
/// torch operators, for cuda candidates, and when nothing is found.
std::vector<std::string> StaticContractReasons(const Candidate& candidate, const TaskBundle& bundle,
                                               const Contract& contract);

}  // namespace kopt
