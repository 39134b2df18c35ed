// The planner: which implementation spaces to try for a task, in what order.
// It reads the captured op graph and offers, for the whole forward:
//   - "fused": one kernel from the fusion generator (fusion.h) when the graph
//     is a chain of elementwise ops and last-dim reductions;
//   - "template": a kernels/ template whose op class and pattern the graph
//     matches (a scan, a reduction over any dim, a pooling window, a GEMM
//     with its bias and activation), with its slots set from the op's args;
//   - "library+fused": when the whole graph cannot be one kernel, the ops
//     before its longest fusable tail as PyTorch operators (cuBLAS, cuDNN)
//     and the tail as one generated kernel, in a hybrid ModelNew;
//   - "library": with a 2-D convolution, written-out attention or a GEMM
//     followed by ReLU, the forward replayed as PyTorch operators with an
//     expert's rewrites (convolutions channels-last with cuDNN's algorithm
//     search, attention as scaled_dot_product_attention, bias + activation
//     in cuBLASLt's epilogue, activations after max pools), the fusable
//     tail as one kernel (hybrid.h, ReplaySource), each a knob;
//   - "cuda-graph": when the reference is launch-bound and writes no state,
//     the reference (and the library+fused hybrid) replayed from a CUDA
//     graph captured per input signature (hybrid.h, GraphedSource);
//   - "hand-written": the task's shipped solutions, when there are any.
// Each option comes with the bytes it must move and a time estimate; the
// expert proposer hands them to the search as the wide first level.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/task.h"
#include "plan/op_graph.h"
#include "plan/templates.h"
#include "task/bundle.h"
#include "task/contract.h"

namespace kopt {

struct PlanOption {
  std::string space;  ///< "fused", "library", "library+fused", "template", "cuda-graph",
                      ///< "hand-written"
  std::string label;  ///< short: "fused row kernel", "scan/scan_lastdim[KOPT_REVERSE=1]"
  std::string about;  ///< what it does and why it should pay, one sentence
  Candidate candidate;
  Json detail = Json::object();  ///< {space, template, slots, ...}
  double est_ms = 0;             ///< 0: no estimate
};

struct Plan {
  std::vector<PlanOption> options;  ///< best first
  std::vector<std::string> notes;   ///< what was considered and why an option is missing
};

struct PlanInputs {
  const TaskBundle* bundle = nullptr;  ///< its graph; may be empty (no capture)
  Contract contract;
  std::string task_stem;           ///< names candidates: "04_softmax"
  std::string task_source;         ///< the task file's text (hybrid options embed it)
  std::vector<Candidate> shipped;  ///< hand-written solutions
  std::vector<KernelTemplate> templates;
};

Plan MakePlan(const PlanInputs& in);

/// Why the forward cannot be replayed from a CUDA graph, or "" when it can: a
/// replay repeats every state update (BatchNorm's running statistics, an
/// in-place write to a parameter, buffer or input) and freezes random draws.
std::string WhyNotGraphed(const OpGraph& g, const Contract& c);

/// The graph with each product by a diagonal matrix made from a vector
/// (mm(diag(v), B), mm(A, diag(v)); diag or diag_embed of a vector, read
/// by nothing else) as the
/// broadcast multiply it equals: v viewed [N, 1] (or [1, N]) times the
/// other operand. O(N^2) memory traffic instead of an O(N^3) GEMM over a
/// mostly-zero matrix; the results match exactly for finite inputs (the
/// GEMM adds exact zeros). nullopt when the graph has no such product.
std::optional<OpGraph> DiagonalProductsAsScales(const OpGraph& g);

/// The template instantiations the graph matches (exposed for tests).
/// `cc` is the device's compute capability (90 for 9.0; 0 unknown):
/// templates that need sm_90a (wgmma) are offered on 9.0 only.
std::vector<PlanOption> MatchTemplates(const OpGraph& g,
                                       const std::vector<KernelTemplate>& templates,
                                       const std::string& task_stem,
                                       std::vector<std::string>* notes, int cc = 0);

}  // namespace kopt
