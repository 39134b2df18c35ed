// The Proposer seam: where candidates come from. The search picks a parent
// node; a proposer turns it into new candidates, each with the move that made
// it and what it expects the move to change.
//
// How to add a proposer: implement Proposer in src/propose/<name>.cc (or a
// folder for a large one, like expert/ or llm/), add it to MakeProposer in
// proposer.cc, and test it in <name>_test.cc with real nvcc compiles of what
// it proposes.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/budget.h"
#include "core/diagnosis.h"
#include "core/json.h"
#include "core/outcome.h"
#include "core/task.h"
#include "propose/llm/provider.h"
#include "task/bundle.h"
#include "task/contract.h"

namespace kopt {

/// What a proposer knows about the task it works on.
struct ProposeContext {
  Task task;
  const TaskBundle* bundle = nullptr;  ///< signature, op graph, floor, baselines
  Contract contract;
  std::string arch;  ///< nvcc target, e.g. "sm_90"
  /// A user's kernel to start from (kopt optimize --from), if any.
  std::optional<Candidate> from;
  Budget* budget = nullptr;  ///< may be null in tests
  std::uint64_t seed = 1;
};

/// A node of the search tree as a proposer sees it.
struct ParentView {
  int node = 0;
  int depth = 0;
  /// Its source; for the root without --from, the proposer's own starting
  /// candidate (see Proposer::Root) or nothing (the reference itself).
  std::optional<Candidate> candidate;
  Json detail = Json::object();  ///< what the proposer recorded when it proposed it
  std::optional<Outcome> outcome;
  /// The analysis tools' findings on it, when it was profiled.
  std::vector<Diagnosis> diagnoses;
  std::vector<std::string> tried_moves;  ///< moves already made from it
};

/// One new candidate.
struct Proposal {
  int parent = 0;                ///< the node it is a child of; -1 for Root()
  std::string move;              ///< in words: "BLOCK 256 -> 512"
  Candidate candidate;           ///< kind, source, name (path may be empty)
  std::string expected;          ///< what the move should change, in words
  std::string proposer;          ///< which proposer made it
  Json detail = Json::object();  ///< the proposer's own record (e.g. knob values)
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string Name() const = 0;
  /// Prepares for a task. Throws kopt::Error, one sentence, when this
  /// proposer cannot work on it (e.g. the tuner finds no kernel with knobs).
  virtual void Begin(const ProposeContext& context) = 0;
  /// The candidate the search starts from when it is not the reference:
  /// --from, or the proposer's own choice (the tuner's shipped solution).
  /// The loop measures it as the root. nullopt: the root is the reference.
  virtual std::optional<Proposal> Root() = 0;
  /// Up to `n` new children of `parent`; fewer, or none, when it has no more
  /// ideas there (the search then closes that node).
  virtual std::vector<Proposal> Propose(const ParentView& parent, int n) = 0;
  /// What the user should know about this proposer's work, one line each
  /// (what it tunes and how many configurations it allows, files it
  /// skipped and why), for the run's log and report.
  virtual std::vector<std::string> Notes() const { return {}; }
  /// True when Propose reads ParentView::diagnoses: the loop then profiles
  /// each new best during the search (profile mode "auto"), not only the winner.
  virtual bool WantsDiagnoses() const { return false; }
  /// Hears how each of its proposals turned out, after it was measured (or
  /// failed), in order: a proposer that repairs failures or keeps a
  /// trajectory reads it; the search never expands a failed node itself.
  virtual void Observe(int node, const Proposal& proposal, const Outcome& outcome) {
    (void)node, (void)proposal, (void)outcome;
  }
};

/// Limits of the knob tuner ("tune"); the defaults are the ones `kopt
/// optimize` uses.
struct TunerOptions {
  /// Parents shallower than this get wide moves (several knobs, far-apart
  /// configurations); deeper ones get neighbour moves (one knob, one step).
  int wide_depth = 1;
  /// A space of at most this many configurations is enumerated; a larger
  /// one is sampled.
  int enumerate_limit = 4096;
  /// Configurations sampled per wide Propose call when the space is sampled.
  int sample_pool = 256;
  /// Best-candidate sampling: each wide child is the best of this many
  /// random valid configurations, scored by how far it lies from the parent
  /// and the parent's earlier children and how many new knob values it tries.
  int diversity = 8;
};

struct ProposerOptions {
  /// replay: candidate files and folders (folders are scanned recursively
  /// for .cu and .py files), replayed in the order given.
  std::vector<std::filesystem::path> replay_paths;
  TunerOptions tuner;
  /// expert: the template library (kernels/) and the diagnosis-to-knob
  /// table (data/expert/moves.json); empty: none.
  std::filesystem::path kernels_dir;
  std::filesystem::path moves_file;
  /// expert: offer the task's hand-written solutions (the task folder's
  /// solutions/) beside the plan's own options. Off (--no-shipped) measures
  /// what the planner and templates reach alone, as on a workload with none.
  bool shipped_solutions = true;
  /// expert and llm: the knowledge base (long-term memory); empty db:
  /// DefaultMemoryPath(cache_dir); curated entries from knowledge_dir (knowledge/).
  std::filesystem::path knowledge_db;
  std::filesystem::path knowledge_dir;
  /// llm: how to reach the model (LlmConfigFromEnv fills what is left empty),
  /// its prompt templates (data/llm/prompts/), a CUTLASS tree for its tools
  /// (empty: the installed nvidia-cutlass package's, asked of `python`), the
  /// cache folder (empty: DefaultCacheDir()), repairs per failed candidate and
  /// tool-call rounds per request.
  LlmConfig llm;
  std::filesystem::path prompts_dir;
  std::filesystem::path cutlass_dir;
  std::filesystem::path cache_dir;
  std::string python;
  int repair_cap = 2;
  int tool_rounds = 4;
};

/// "expert", "tune", "replay" or "llm"; throws kopt::Error naming the choices for any other
/// name. How to add one: see the top of this file.
std::unique_ptr<Proposer> MakeProposer(const std::string& name, const ProposerOptions& options);

/// The names MakeProposer accepts, for --help.
std::vector<std::string> ProposerNames();

}  // namespace kopt
