#include "plan/contract_inference.h"

#include <set>

#include <fmt/format.h>

namespace kopt {

void InferContract(const std::optional<OpGraph>& graph, const TaskBundle& bundle, Contract* c) {
  if (!graph) {
    c->inferred.push_back("nothing inferred: the capture has no op graph with dataflow");
    return;
  }
  // Ops that write state: in place on a parameter or buffer, or the batch
  // norm forms that update running statistics.
  std::string writer;
  bool batch_stats = false, dropout = false;
  for (const GraphNode& n : graph->nodes) {
    const bool bn = n.base == "native_batch_norm" || n.base == "_native_batch_norm_legit" ||
                    n.base == "cudnn_batch_norm" || n.base == "batch_norm" ||
                    n.base == "_batch_norm_impl_index" ||
                    n.base == "_native_batch_norm_legit_functional";
    if (bn) {
      const Json* training = OpGraph::Arg(n, 5, "training");
      if (training && training->is_boolean() && training->get<bool>()) {
        batch_stats = true;
        if (writer.empty()) writer = n.op + " (running statistics)";
      }
    }
    if ((n.base == "native_dropout" || n.base == "dropout" || n.base == "bernoulli") &&
        !n.in.empty()) {
      const Json* p = OpGraph::Arg(n, 1, "p");
      const Json* train = OpGraph::Arg(n, 2, "train");
      const bool on = !train || !train->is_boolean() || train->get<bool>();
      if (on && (!p || !p->is_number() || p->get<double>() > 0)) dropout = true;
    }
    if (n.inplace)
      for (int v : n.in) {
        const GraphValue& gv = graph->Value(v);
        if (gv.source == "abi" && (gv.role == "param" || gv.role == "buffer") && writer.empty())
          writer = fmt::format("{} (on {})", n.op, gv.name);
      }
  }
  if (!c->pre_transform_weights) {
    c->pre_transform_weights = writer.empty();
    c->inferred.push_back(
        writer.empty()
            ? "weights may be pre-transformed once: no op of the forward writes a parameter or "
              "buffer"
            : "weights may not be pre-transformed: the forward writes its state through " + writer);
  }
  if (c->training.empty()) {
    if (batch_stats)
      c->training =
          "batch statistics (BatchNorm in training mode normalizes with the batch's mean and "
          "variance and updates "
          "its running buffers; both must match)";
    else if (dropout)
      c->training = "active dropout (the forward is random; such a task cannot certify candidates)";
    else
      c->training =
          bundle.training ? "training mode, but no op behaves differently in it" : "inference";
    c->inferred.push_back("training semantics: " + c->training);
  }
  if (!c->torch_ops)
    c->inferred.push_back(
        "no PyTorch operators: library calls go through the CUDA libraries directly");
}

}  // namespace kopt
