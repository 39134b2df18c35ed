// The LLM proposer ("llm"): asks a model for candidates. Each prompt holds
// the task, its contract, the plan, the parent's source and outcome, its
// diagnoses in words with their evidence, matching knowledge entries and the
// task's trajectory; the model may search CUTLASS/CuTe headers and the
// knowledge base first (tools.h). A candidate that fails to build or verify
// is sent back with the compiler's or verifier's words, up to a cap.
// Every prompt is recorded in its proposal's detail (and so in the run).
#pragma once

#include <memory>

#include "propose/proposer.h"

namespace kopt {

/// Throws kopt::Error at Begin, one sentence, when no model is configured.
std::unique_ptr<Proposer> MakeLlmProposer(const ProposerOptions& options);

}  // namespace kopt
