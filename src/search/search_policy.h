// The SearchPolicy seam: which node of the search tree to expand next, and
// how a measured result propagates. A lifecycle a test can drive by hand:
// Begin, then NextBatch / AddChild / NoProposal / Report as often as wanted,
// then End.
//
// How to add a policy: implement SearchPolicy in src/search/<name>.cc behind a
// factory, add one line for it to the table in search_policy.cc, and add its
// tests to search_test.cc (a synthetic landscape it should solve, and the same
// seed giving the same tree).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "search/search_tree.h"

namespace kopt {

/// Knobs of the search (data, not code paths); the defaults are the ones
/// `kopt optimize` uses.
struct SearchOptions {
  std::uint64_t seed = 1;
  /// Progressive widening: a node visited n times may have at most
  /// ceil(k * n^alpha) children; k shrinks with depth (asymmetric branching:
  /// wide near the root, narrow deep in the tree): k_d = max(k_min,
  /// k_root * depth_decay^d).
  double widen_k_root = 4.0;
  double widen_k_min = 1.0;
  double widen_alpha = 0.5;
  double depth_decay = 0.5;
  /// UCT exploration constant on rewards normalized to [0, 1].
  double exploration = 0.7;
  /// Reward of a failure, on the normalized scale (a measured candidate as
  /// slow as the worst seen scores 0). Per failure kind.
  double penalty_build_failed = -0.10;
  double penalty_incorrect = -0.25;
  double penalty_crashed = -0.25;
  double penalty_timed_out = -0.20;
  /// Dead-end pruning: a node whose last `prune_after` expansions in its
  /// subtree all failed or failed to beat it by `prune_min_gain` (relative)
  /// is closed, as is a node whose proposer had no more ideas.
  int prune_after = 6;
  double prune_min_gain = 0.01;
  /// Beam search: nodes kept per generation.
  int beam_width = 4;
};

/// Outcome of one node as the search sees it.
struct NodeResult {
  NodeState state = NodeState::kMeasured;
  /// Lower is better (time in ms, or energy per call); only for kMeasured.
  double objective = 0;
};

class SearchPolicy {
 public:
  virtual ~SearchPolicy() = default;
  virtual std::string Name() const = 0;

  /// Starts a search whose root (node 0) is the starting point (the
  /// reference, or a user's kernel) measured at `root_objective` (> 0).
  virtual void Begin(double root_objective) = 0;
  /// Up to `n` nodes to expand next; each becomes the parent of one new
  /// proposal. The same node may appear more than once (a wide root). Nodes
  /// already handed out and not yet reported count as visited (virtual loss),
  /// so a batch spreads out. Empty when every node is closed: the search is
  /// over.
  virtual std::vector<int> NextBatch(int n) = 0;
  /// Records a proposal as a child of `parent`. Returns its node id, or -1
  /// when search memory has seen `source_hash` before (anywhere in the tree)
  /// or the same (parent, move) pair: it must not be measured again.
  virtual int AddChild(int parent, const std::string& move, const std::string& source_hash) = 0;
  /// The proposer had no new idea at `parent` (it is closed for expansion).
  virtual void NoProposal(int parent) = 0;
  /// The result of node `node` (a child added earlier).
  virtual void Report(int node, const NodeResult& result) = 0;
  virtual void End() = 0;

  virtual const SearchTree& tree() const = 0;
  /// The measured node with the lowest objective (0, the root, at first).
  virtual int Best() const = 0;
};

/// "mcts" (default), "greedy", "beam" or "random"; throws kopt::Error naming
/// the choices for any other name.
std::unique_ptr<SearchPolicy> MakeSearchPolicy(const std::string& name, const SearchOptions& options);

/// The names MakeSearchPolicy accepts, for --help.
std::vector<std::string> SearchPolicyNames();

}  // namespace kopt
