// The expert proposer ("expert", kopt optimize's default): no network, no
// model. Its first level is the planner's options for the task (a fused
// kernel from the fusion generator, kernels/ templates matched to the op
// graph, the task's hand-written solutions); below each, moves keyed to the
// node's diagnoses (data/expert/moves.json: a suggested move -> a knob
// stepped one value), then the knob tuner's moves. See docs/expert.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "memory/knowledge.h"
#include "plan/planner.h"
#include "propose/proposer.h"

namespace kopt {

std::unique_ptr<Proposer> MakeExpertProposer(const ProposerOptions& options);

/// Measured evidence before estimates: moves the plan options that long-term
/// memory saw win (a learned entry whose move was "plan: LABEL", the label
/// compared without its knob values, so a template's win counts at other
/// settings) ahead of the others, the largest gain first; the rest keep the
/// planner's order. Curated entries are ignored. One note per option moved.
std::vector<std::string> PreferLearnedPlanOptions(const std::vector<KnowledgeEntry>& entries,
                                                  std::vector<PlanOption>* options);

}  // namespace kopt
