// MakeProposer: the table of proposers by name.
#include "propose/proposer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "propose/expert.h"
#include "propose/llm/llm_proposer.h"
#include "propose/replay.h"
#include "propose/tuner.h"

namespace kopt {
namespace {

struct ProposerEntry {
  const char* name;
  std::unique_ptr<Proposer> (*make)(const ProposerOptions& options);
};

// How to add a proposer: one line here, its factory in src/propose/<name>.h
// (or <name>/<name>_proposer.h for a folder).
const ProposerEntry kProposers[] = {
    {"expert", [](const ProposerOptions& o) { return MakeExpertProposer(o); }},
    {"tune", [](const ProposerOptions& o) { return MakeTuneProposer(o.tuner); }},
    {"replay", [](const ProposerOptions& o) { return MakeReplayProposer(o.replay_paths); }},
    {"llm", [](const ProposerOptions& o) { return MakeLlmProposer(o); }},
};

}  // namespace

std::unique_ptr<Proposer> MakeProposer(const std::string& name, const ProposerOptions& options) {
  for (const ProposerEntry& e : kProposers) {
    if (name == e.name) return e.make(options);
  }
  throw Error(fmt::format("there is no proposer named \"{}\": choose one of {}.", name,
                          fmt::join(ProposerNames(), ", ")));
}

std::vector<std::string> ProposerNames() {
  std::vector<std::string> names;
  for (const ProposerEntry& e : kProposers) names.push_back(e.name);
  return names;
}

}  // namespace kopt
