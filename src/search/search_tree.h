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

const char* NodeStateName(NodeState s);

struct SearchNode {
  int id = 0;
  int parent = -1;  ///< -1 for the root
  int depth = 0;
  std::string move;         ///< what made it from its parent, in words
  std::string source_hash;  ///< content hash of its source
  NodeState state = NodeState::kPending;
  double objective = 0;     ///< lower is better; valid when kMeasured
  double reward = 0;        ///< the last normalized reward credited to it
  int visits = 0;           ///< backed-up results (its own and its subtree's)
  double value_sum = 0;     ///< sum of backed-up normalized rewards
  int in_flight = 0;        ///< handed out by NextBatch, not yet reported
  bool closed = false;      ///< no more expansions (pruned or exhausted)
  std::string closed_why;
  int fruitless = 0;        ///< consecutive subtree results that did not beat it
  std::vector<int> children;
};

class SearchTree {
 public:
  /// Node 0, measured at `objective`.
  void Reset(double root_objective, const std::string& root_hash = "");
  /// Adds a pending child; -1 when `source_hash` (non-empty) or (parent,
  /// move) was seen before.
  int AddChild(int parent, const std::string& move, const std::string& source_hash);
  bool SeenSource(const std::string& source_hash) const;
  bool SeenMove(int parent, const std::string& move) const;

  const SearchNode& node(int id) const { return nodes_.at(id); }
  SearchNode& mutable_node(int id) { return nodes_.at(id); }
  int size() const { return static_cast<int>(nodes_.size()); }
  const std::vector<SearchNode>& nodes() const { return nodes_; }

  /// Path from the root to `id` (root first).
  std::vector<int> PathTo(int id) const;
  /// Stable text rendering (one line per node, depth-first), for tests that
  /// compare two trees.
  std::string Dump() const;

 private:
  std::vector<SearchNode> nodes_;
  std::set<std::string> sources_;
  std::set<std::pair<int, std::string>> moves_;
};

}  // namespace kopt
