// The search tree: nodes are candidates, the root is the starting point.
// Shared by every policy; it holds what was tried (search memory) and what
// each node scored.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace kopt {

enum class NodeState {
  kPending,  ///< proposed, not yet measured
  kMeasured,
  kBuildFailed,
  kIncorrect,
  kCrashed,
  kTimedOut,
};

/// "pending", "measured", "build_failed", "incorrect", "crashed", "timed_out"
/// (the failure names match OutcomeName).
const char* NodeStateName(NodeState s);
/// Any state but kPending and kMeasured.
bool IsFailure(NodeState s);

struct SearchNode {
  int id = 0;
  int parent = -1;  ///< -1 for the root
  int depth = 0;
  std::string move;         ///< what made it from its parent, in words
  std::string source_hash;  ///< content hash of its source
  NodeState state = NodeState::kPending;
  double objective = 0;  ///< lower is better; valid when kMeasured
  /// log(root objective / objective) when kMeasured: > 0 is faster than the root.
  double raw_reward = 0;
  /// Its own result on the normalized scale in force now (a measured node as
  /// slow as the slowest seen scores 0, as fast as the fastest 1; a failure
  /// scores its penalty). Rescaled whenever the extremes move.
  double reward = 0;
  int visits = 0;  ///< backed-up results (its own and its subtree's)
  /// Sum of backed-up normalized rewards, on the scale in force now (kept
  /// exact as the extremes move: it is computed from the raw sums below).
  double value_sum = 0;
  double raw_sum = 0;  ///< sum of raw_reward over measured nodes in its subtree, itself included
  int measured_count = 0;  ///< measured nodes in its subtree, itself included
  double penalty_sum = 0;  ///< sum of failure penalties in its subtree
  /// Best raw_reward in its subtree, itself included; meaningful only when
  /// measured_count > 0.
  double best_raw = 0;
  int in_flight = 0;  ///< expansions handed out at it or below it and not yet reported
  /// The proposer has no more ideas here (NoProposal, or it offered only
  /// already-seen candidates `prune_after` times in a row): it gets no new
  /// children, but its children may still be expanded.
  bool exhausted = false;
  bool closed = false;  ///< nothing more is expanded here or below (pruned or exhausted)
  std::string closed_why;
  int fruitless = 0;   ///< consecutive subtree results that did not beat it
  int duplicates = 0;  ///< consecutive proposals at it that search memory rejected
  std::vector<int> children;
};

class SearchTree {
 public:
  /// Node 0, measured at `objective`; forgets everything else.
  void Reset(double root_objective, const std::string& root_hash = "");
  /// Adds a pending child; -1 when `source_hash` (non-empty) or (parent,
  /// move) was seen before. A move rejected for its source is remembered
  /// too: it was tried. Throws kopt::Error when `parent` is not a node.
  int AddChild(int parent, const std::string& move, const std::string& source_hash);
  bool SeenSource(const std::string& source_hash) const;
  bool SeenMove(int parent, const std::string& move) const;

  const SearchNode& node(int id) const { return nodes_.at(id); }
  SearchNode& mutable_node(int id) { return nodes_.at(id); }
  int size() const { return static_cast<int>(nodes_.size()); }
  const std::vector<SearchNode>& nodes() const { return nodes_; }

  /// Path from the root to `id` (root first).
  std::vector<int> PathTo(int id) const;
  /// `id` and every node below it, depth-first in child order.
  std::vector<int> Subtree(int id) const;
  /// Stable text rendering for tests that compare two trees: depth-first in
  /// child order, one line per node, indented two spaces per level:
  /// `<id> <- <parent> [<move>] <state> <objective, 6 decimals, or -> visits=<n>`
  /// and ` closed` when closed.
  std::string Dump() const;

 private:
  std::vector<SearchNode> nodes_;
  std::set<std::string> sources_;
  std::set<std::pair<int, std::string>> moves_;
};

}  // namespace kopt
