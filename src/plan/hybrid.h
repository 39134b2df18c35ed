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

/// A hybrid ModelNew that runs `eager_class`'s forward (the task's `Model`,
/// or a ModelNew already defined in `module_source`) from a CUDA graph:
/// captured once per input signature (shapes, strides, dtypes, devices and
/// the parameters' storage) after two warm-up calls on a side stream, then
/// replayed on the caller's stream. Inputs are copied into the graph's own
/// buffers and outputs cloned out of them, so every call recomputes from its
/// inputs and no two calls share an output. Calls it cannot graph
/// (non-tensor or CPU arguments, a capture already running) run eagerly.
/// For forwards that write no state: a replay repeats every in-place update,
/// and the warm-up calls would add updates the reference never made.
std::string GraphedSource(const std::string& module_source, const std::string& eager_class);

}  // namespace kopt
