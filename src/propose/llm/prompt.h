// The LLM proposer's prompts: template files (data/llm/prompts/*.md, text
// that experts edit) with named {{slots}}, filled from typed values, each
// section capped and the whole kept under a character budget.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnosis.h"
#include "core/json.h"
#include "core/outcome.h"
#include "core/task.h"
#include "memory/knowledge.h"
#include "plan/planner.h"
#include "task/bundle.h"
#include "task/contract.h"

namespace kopt {

/// The template files of one prompt folder.
struct PromptTemplates {
  std::string system;   ///< system.md
  std::string propose;  ///< propose.md: improve a parent
  std::string repair;   ///< repair.md: fix a candidate that failed
  std::string formats;  ///< formats.md: the ABI and the hybrid format, filled into {{formats}}
};

/// Reads system.md, propose.md, repair.md and formats.md from `dir`. Throws
/// kopt::Error, one sentence, naming a missing file.
PromptTemplates LoadPromptTemplates(const std::filesystem::path& dir);

/// One slot's value. Sections are cut to `cap` chars; when the prompt is
/// still over budget, the lowest `keep` are cut further first.
struct PromptSection {
  std::string name;
  std::string text;
  std::size_t cap = 4000;
  int keep = 5;  ///< 0..9: how much it matters that this section stays whole
};

struct RenderedPrompt {
  std::string text;
  /// {slot: {"chars": n, "cut": bool}} for every section given.
  Json sections = Json::object();
  /// Slots of the template that no section filled (rendered empty).
  std::vector<std::string> unfilled;
};

/// Fills each {{name}} of `tmpl`; at most `budget_chars` in all when the
/// sections can be cut that far (the template's own text is never cut).
RenderedPrompt RenderPrompt(const std::string& tmpl, std::vector<PromptSection> sections,
                            std::size_t budget_chars);

/// `text` cut to at most `cap` chars (head kept, a note of what was cut).
std::string CapText(const std::string& text, std::size_t cap);

/// What one prompt is made from.
struct PromptInputs {
  Task task;
  std::string task_source;
  Contract contract;
  const TaskBundle* bundle = nullptr;  ///< device facts, floor, baselines; may be null
  std::string arch;
  std::vector<PlanOption> plan;  ///< best first
  std::optional<Candidate> parent;
  std::optional<Outcome> parent_outcome;
  std::vector<Diagnosis> diagnoses;
  std::vector<KnowledgeEntry> memory;
  std::string trajectory;  ///< Trajectory::Summary
  std::vector<std::string> tried_moves;
  int repair_round = 0;  ///< repair prompts: 1 for the first repair
  int repair_cap = 2;
};

/// Caps per section and the whole prompt's budget, in chars.
struct PromptLimits {
  std::size_t budget_chars = 60000;
  std::size_t task = 12000;
  std::size_t parent = 20000;
  std::size_t diagnoses = 5000;
  std::size_t memory = 6000;
  std::size_t trajectory = 3000;
  std::size_t plan = 3000;
  std::size_t errors = 6000;
  std::size_t device = 2000;
  std::size_t contract = 1500;
  std::size_t formats = 4000;
};

RenderedPrompt RenderProposePrompt(const PromptTemplates& t, const PromptInputs& in,
                                   const PromptLimits& limits = {});
/// For a parent that failed (BuildFailed, Incorrect, Crashed, TimedOut):
/// its source and what went wrong.
RenderedPrompt RenderRepairPrompt(const PromptTemplates& t, const PromptInputs& in,
                                  const PromptLimits& limits = {});

// The sections in words (exposed for tests and for the expert's notes).
std::string ContractText(const Contract& c);
std::string DeviceText(const TaskBundle* bundle, const std::string& arch);
std::string PlanText(const std::vector<PlanOption>& plan, const TaskBundle* bundle);
/// Each finding: tool, severity, share of the call, advice, evidence, moves.
std::string DiagnosesText(const std::vector<Diagnosis>& ds);
std::string MemoryText(const std::vector<KnowledgeEntry>& entries);
std::string OutcomeText(const Outcome& o, const TaskBundle* bundle);
/// What went wrong in full: the build log, the verifier's reasons, the crash.
std::string FailureText(const Outcome& o);

}  // namespace kopt
