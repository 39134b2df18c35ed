// A library call with a fused tail, as a hybrid candidate (a KernelBench
// ModelNew file): the ops before the tail run as PyTorch operators
// (torch.ops.aten: cuBLAS, cuDNN, whatever PyTorch picks), replayed from the
// captured graph, and the tail runs as one generated kernel (FuseTail)
// loaded with kopt.load_cuda. ModelNew subclasses the task's own Model (its
// source is embedded), so its parameters and state_dict are the Model's.
#pragma once

#include <optional>
#include <string>

#include "plan/fusion.h"
#include "plan/op_graph.h"

namespace kopt {

/// The ModelNew source, or nullopt with `why` when a replayed op's
/// arguments cannot be written in Python or an output's shape is not one
/// the kernel's inputs give.
std::optional<std::string> HybridSource(const OpGraph& g, std::size_t first_tail_node,
                                        const FusedKernel& tail, const std::string& task_source,
                                        std::string* why);

}  // namespace kopt
