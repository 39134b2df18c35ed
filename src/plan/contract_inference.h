// Contract inference: what the captured op graph says about what a candidate
// may do, filled into the contract where the task's contract file and the
// command line said nothing (they always win). Written into the run with
// the contract and shown in its report.
#pragma once

#include "plan/op_graph.h"
#include "task/bundle.h"
#include "task/contract.h"

namespace kopt {

/// Infers, from the graph:
///  - pre_transform_weights (when unset): allowed when no op of the forward
///    writes a parameter or buffer, so what is derived from them at init
///    stays valid; refused otherwise, naming the op;
///  - training (when empty): batch-statistics normalization (BatchNorm in
///    training mode normalizes with the batch's own statistics and updates
///    its running buffers, which the verifier compares), active dropout, or
///    none of those;
/// and records each inference, with its reason, in `contract->inferred`.
/// Without a graph (nullopt) it says so and leaves the fields unset.
void InferContract(const std::optional<OpGraph>& graph, const TaskBundle& bundle,
                   Contract* contract);

}  // namespace kopt
