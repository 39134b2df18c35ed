#include "search/search_policy.h"

#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "search/tree_policy.h"

namespace kopt {
namespace {

using Factory = std::unique_ptr<SearchPolicy> (*)(const SearchOptions&);

struct Entry {
  const char* name;
  Factory make;
};

// The table: one line per policy, the default first.
constexpr Entry kPolicies[] = {
    {"mcts", MakeMctsPolicy},
    {"greedy", MakeGreedyPolicy},
    {"beam", MakeBeamPolicy},
    {"random", MakeRandomPolicy},
    {"sweep", MakeSweepPolicy},
};

void Check(bool ok, const char* option, double value, const char* range) {
  if (!ok) {
    throw Error(
        fmt::format("search option {} = {} is out of range: use a value {}", option, value, range));
  }
}

void CheckOptions(const SearchOptions& o) {
  auto finite = [](double v) { return std::isfinite(v); };
  Check(finite(o.widen_k_root) && o.widen_k_root > 0, "widen_k_root", o.widen_k_root, "> 0");
  Check(finite(o.widen_k_min) && o.widen_k_min > 0, "widen_k_min", o.widen_k_min, "> 0");
  Check(o.widen_alpha >= 0 && o.widen_alpha <= 1, "widen_alpha", o.widen_alpha, "in [0, 1]");
  Check(o.depth_decay > 0 && o.depth_decay <= 1, "depth_decay", o.depth_decay, "in (0, 1]");
  Check(finite(o.exploration) && o.exploration >= 0, "exploration", o.exploration, ">= 0");
  Check(o.max_backup >= 0 && o.max_backup <= 1, "max_backup", o.max_backup, "in [0, 1]");
  const std::pair<const char*, double> penalties[] = {
      {"penalty_build_failed", o.penalty_build_failed},
      {"penalty_incorrect", o.penalty_incorrect},
      {"penalty_crashed", o.penalty_crashed},
      {"penalty_timed_out", o.penalty_timed_out},
  };
  for (const auto& [name, value] : penalties) {
    Check(finite(value) && value <= 0, name, value,
          "<= 0 (a failure scores below any measurement)");
  }
  Check(o.prune_after >= 1, "prune_after", o.prune_after, ">= 1");
  Check(o.prune_min_gain >= 0 && o.prune_min_gain < 1, "prune_min_gain", o.prune_min_gain,
        "in [0, 1)");
  Check(o.beam_width >= 1, "beam_width", o.beam_width, ">= 1");
  Check(o.beam_branch >= 1, "beam_branch", o.beam_branch, ">= 1");
}

}  // namespace

std::unique_ptr<SearchPolicy> MakeSearchPolicy(const std::string& name,
                                               const SearchOptions& options) {
  for (const Entry& e : kPolicies) {
    if (name == e.name) {
      CheckOptions(options);
      return e.make(options);
    }
  }
  std::string choices;
  for (const std::string& n : SearchPolicyNames()) choices += (choices.empty() ? "" : ", ") + n;
  throw Error(fmt::format("there is no search policy '{}': choose one of {}", name, choices));
}

std::vector<std::string> SearchPolicyNames() {
  std::vector<std::string> names;
  for (const Entry& e : kPolicies) names.push_back(e.name);
  return names;
}

}  // namespace kopt
