#include "search/tree_policy.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace kopt {

void TreePolicy::Begin(double root_objective, const std::string& root_hash) {
  if (!(root_objective > 0) || !std::isfinite(root_objective)) {
    throw Error(
        fmt::format("the search cannot start from a root objective of {}: measure the "
                    "starting point and pass its positive time",
                    root_objective));
  }
  tree_.Reset(root_objective, root_hash);
  rng_.seed(options_.seed);
  begun_ = true;
  ended_ = false;
  best_ = 0;
  raw_lo_ = raw_hi_ = 0;
  awaiting_.assign(1, 0);
  exhausted_why_.assign(1, "");
  SearchNode& root = tree_.mutable_node(0);
  root.visits = 1;
  root.measured_count = 1;
  Rescale();
  OnBegin();
}

std::vector<int> TreePolicy::NextBatch(int n) {
  RequireBegun("NextBatch");
  std::vector<int> out;
  if (ended_ || n <= 0 || Done()) return out;
  Choose(n, out);
  return out;
}

int TreePolicy::AddChild(int parent, const std::string& move, const std::string& source_hash) {
  RequireBegun("AddChild");
  if (parent < 0 || parent >= tree_.size() || tree_.node(parent).state != NodeState::kMeasured) {
    throw Error(
        fmt::format("node {} cannot take a child: add children only to measured nodes "
                    "that NextBatch returned",
                    parent));
  }
  int id = tree_.AddChild(parent, move, source_hash);
  if (id < 0) {
    Drop(parent);
    SearchNode& p = tree_.mutable_node(parent);
    if (++p.duplicates >= options_.prune_after && !p.exhausted) {
      MarkExhausted(parent, fmt::format("its proposer offered only already-seen candidates {} "
                                        "times in a row",
                                        p.duplicates));
    }
    return -1;
  }
  awaiting_.push_back(0);
  exhausted_why_.emplace_back();
  // The pending child carries one in-flight unit up to the root: the one
  // NextBatch handed out for `parent`, or a new one for a child nobody asked for.
  if (awaiting_[parent] > 0) {
    --awaiting_[parent];
  } else {
    for (int v : tree_.PathTo(parent)) ++tree_.mutable_node(v).in_flight;
  }
  SearchNode& p = tree_.mutable_node(parent);
  p.duplicates = 0;
  SearchNode& child = tree_.mutable_node(id);
  child.in_flight = 1;
  if (p.closed) {
    child.closed = true;
    child.closed_why = fmt::format("inside node {}'s closed subtree", parent);
  }
  return id;
}

void TreePolicy::NoProposal(int parent) {
  RequireBegun("NoProposal");
  if (parent < 0 || parent >= tree_.size() || tree_.node(parent).state != NodeState::kMeasured) {
    throw Error(
        fmt::format("NoProposal for node {}, which is not a measured node: pass an id "
                    "that NextBatch returned",
                    parent));
  }
  Drop(parent);
  MarkExhausted(parent, "its proposer had no more ideas");
}

void TreePolicy::Report(int id, const NodeResult& result) {
  RequireBegun("Report");
  if (id <= 0 || id >= tree_.size() || tree_.node(id).state != NodeState::kPending) {
    throw Error(
        fmt::format("Report for node {}, which is not a pending child: report each "
                    "node AddChild returned exactly once",
                    id));
  }
  if (result.state == NodeState::kPending) {
    throw Error(
        fmt::format("Report for node {} says kPending: report a measurement or a "
                    "failure",
                    id));
  }
  const bool measured = result.state == NodeState::kMeasured;
  if (measured && (!(result.objective > 0) || !std::isfinite(result.objective))) {
    throw Error(
        fmt::format("node {} was reported measured at {}: a measured objective must be "
                    "a positive finite number",
                    id, result.objective));
  }
  SearchNode& n = tree_.mutable_node(id);
  n.state = result.state;
  const double penalty = Penalty(result.state);
  if (measured) {
    n.objective = result.objective;
    n.raw_reward = std::log(tree_.node(0).objective / result.objective);
    raw_lo_ = std::min(raw_lo_, n.raw_reward);
    raw_hi_ = std::max(raw_hi_, n.raw_reward);
    const SearchNode& best = tree_.node(best_);
    if (result.objective < best.objective || (result.objective == best.objective && id < best_)) {
      best_ = id;
    }
  }
  const double raw = n.raw_reward;
  const std::vector<int> path = tree_.PathTo(id);
  for (int v : path) {
    SearchNode& a = tree_.mutable_node(v);
    ++a.visits;
    --a.in_flight;
    if (measured) {
      a.best_raw = a.measured_count == 0 ? raw : std::max(a.best_raw, raw);
      a.raw_sum += raw;
      ++a.measured_count;
    } else {
      a.penalty_sum += penalty;
    }
    if (v == id) continue;
    const bool gained = measured && result.objective < a.objective * (1 - options_.prune_min_gain);
    a.fruitless = gained ? 0 : a.fruitless + 1;
  }
  Rescale();
  if (!measured) {
    Close(id, fmt::format("it failed ({}): a leaf", NodeStateName(result.state)));
  }
  // Dead-end pruning, highest first (its subtree holds the lower ones). The
  // root is never pruned: every result in the tree counts toward it, so six
  // slow candidates in a row would end a run with budget and ideas left.
  for (size_t i = 1; i + 1 < path.size(); ++i) {
    const SearchNode& a = tree_.node(path[i]);
    if (!a.closed && a.fruitless >= options_.prune_after) {
      Close(a.id, fmt::format("its last {} subtree results did not beat it by {:g}%", a.fruitless,
                              100 * options_.prune_min_gain));
      break;
    }
  }
}

void TreePolicy::Handout(int id) {
  ++awaiting_.at(id);
  for (int v : tree_.PathTo(id)) ++tree_.mutable_node(v).in_flight;
}

void TreePolicy::Close(int id, const std::string& why) {
  for (int v : tree_.Subtree(id)) {
    SearchNode& n = tree_.mutable_node(v);
    if (n.closed) continue;
    n.closed = true;
    n.closed_why = v == id ? why : fmt::format("inside node {}'s closed subtree", id);
  }
  int parent = tree_.node(id).parent;
  if (parent >= 0) CloseSpent(parent);
}

bool TreePolicy::Expandable(int id) const {
  const SearchNode& n = tree_.node(id);
  return n.state == NodeState::kMeasured && !n.closed && !n.exhausted;
}

double TreePolicy::Normalize(double raw) const {
  if (raw_hi_ <= raw_lo_) return 0.5;
  return (raw - raw_lo_) / (raw_hi_ - raw_lo_);
}

void TreePolicy::RequireBegun(const char* call) const {
  if (!begun_) {
    throw Error(
        fmt::format("{} was called before Begin: start the search with Begin(root "
                    "objective) first",
                    call));
  }
}

void TreePolicy::Drop(int id) {
  if (awaiting_.at(id) == 0) return;
  --awaiting_[id];
  for (int v : tree_.PathTo(id)) --tree_.mutable_node(v).in_flight;
}

void TreePolicy::MarkExhausted(int id, const std::string& why) {
  SearchNode& n = tree_.mutable_node(id);
  if (!n.exhausted) {
    n.exhausted = true;
    exhausted_why_.at(id) = why;
  }
  CloseSpent(id);
}

void TreePolicy::CloseSpent(int id) {
  for (int v = id; v >= 0; v = tree_.node(v).parent) {
    SearchNode& n = tree_.mutable_node(v);
    if (n.closed || !n.exhausted) return;
    for (int c : n.children) {
      if (!tree_.node(c).closed) return;
    }
    n.closed = true;
    n.closed_why =
        n.children.empty() ? exhausted_why_[v] : exhausted_why_[v] + ", and every child is closed";
  }
}

double TreePolicy::Penalty(NodeState s) const {
  switch (s) {
    case NodeState::kBuildFailed:
      return options_.penalty_build_failed;
    case NodeState::kIncorrect:
      return options_.penalty_incorrect;
    case NodeState::kCrashed:
      return options_.penalty_crashed;
    case NodeState::kTimedOut:
      return options_.penalty_timed_out;
    case NodeState::kPending:
    case NodeState::kMeasured:
      break;
  }
  return 0;
}

void TreePolicy::Rescale() {
  // Linear normalization commutes with sums: sum of (raw - lo) / (hi - lo)
  // over m results is (raw_sum - m * lo) / (hi - lo).
  const double span = raw_hi_ - raw_lo_;
  for (const SearchNode& c : tree_.nodes()) {
    SearchNode& n = tree_.mutable_node(c.id);
    if (n.state == NodeState::kMeasured) {
      n.reward = Normalize(n.raw_reward);
    } else if (IsFailure(n.state)) {
      n.reward = Penalty(n.state);
    }
    const double measured_part =
        span > 0 ? (n.raw_sum - n.measured_count * raw_lo_) / span : 0.5 * n.measured_count;
    n.value_sum = measured_part + n.penalty_sum;
  }
}

}  // namespace kopt
