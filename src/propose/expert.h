// The expert proposer ("expert", kopt optimize's default): no network, no
// model. Its first level is the planner's options for the task (a fused
// kernel from the fusion generator, kernels/ templates matched to the op
// graph, the task's hand-written solutions); below each, moves keyed to the
// node's diagnoses (data/expert/moves.json: a suggested move -> a knob
// stepped one value), then the knob tuner's moves. See docs/expert.md.
#pragma once

#include <memory>

#include "propose/proposer.h"

namespace kopt {

std::unique_ptr<Proposer> MakeExpertProposer(const ProposerOptions& options);

}  // namespace kopt
