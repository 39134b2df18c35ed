// The SearchPolicy seam: which node of the search tree to expand next, and
// how a measured result propagates. A lifecycle a test can drive by hand:
// Begin, then NextBatch / AddChild / NoProposal / Report as often as wanted,
// then End.
//
// How to add a policy: implement it in src/search/<name>.cc, usually as a
// TreePolicy (tree_policy.h: search memory, backup, pruning and closing come
// with it; you write Choose), behind a factory declared at the bottom of
// tree_policy.h; add one line for it to the table in search_policy.cc; and add
// its tests to search_test.cc (a synthetic landscape it should solve, and the
// same seed giving the same tree).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "search/search_tree.h"

namespace kopt {

/// Knobs of the search (data, not code paths); the defaults are the ones
/// `kopt optimize` uses. MakeSearchPolicy checks them.
struct SearchOptions {
  std::uint64_t seed = 1;
  /// Progressive widening: a node visited n times (expansions handed out and
  /// not yet reported count as visits) may have at most ceil(k * max(1,
  /// n)^alpha) children; k shrinks with depth (asymmetric branching: wide near
  /// the root, narrow deep in the tree): k_d = max(k_min, k_root *
  /// depth_decay^d). k_root = 2 allows 16 root children after 60 results;
  /// 4 would allow 32, half such a budget spent one level deep.
  double widen_k_root = 2.0;
  double widen_k_min = 1.0;
  double widen_alpha = 0.5;
  double depth_decay = 0.5;
  /// UCT exploration constant on rewards normalized to [0, 1].
  double exploration = 0.7;
  /// MCTS value of a node: (1 - max_backup) * mean of its subtree's rewards +
  /// max_backup * its subtree's best reward (mixmax backup; 0 is plain
  /// averaging). We optimize, so the best of a subtree matters, but the mean
  /// keeps one lucky result from drawing every visit.
  double max_backup = 0.5;
  /// Reward of a failure, on the normalized scale (a measured candidate as
  /// slow as the worst seen scores 0). Per failure kind; at most 0.
  double penalty_build_failed = -0.10;
  double penalty_incorrect = -0.25;
  double penalty_crashed = -0.25;
  double penalty_timed_out = -0.20;
  /// Dead-end pruning: a node (not the root) whose last `prune_after` results
  /// in its subtree all failed or failed to beat it by `prune_min_gain`
  /// (relative) is closed with its subtree. A node whose proposer had no more
  /// ideas, or offered only already-seen candidates `prune_after` times in a
  /// row, gets no new children, and closes once its children are closed.
  int prune_after = 6;
  double prune_min_gain = 0.01;
  /// Beam search: nodes kept per generation, and children asked of each.
  int beam_width = 4;
  int beam_branch = 4;
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
  /// reference, or a user's kernel) measured at `root_objective` (> 0);
  /// `root_hash`, when given, enters search memory so the root's own source
  /// is never measured again. Forgets any earlier search.
  virtual void Begin(double root_objective, const std::string& root_hash = "") = 0;
  /// Up to `n` nodes to expand next; each becomes the parent of one new
  /// proposal. The same node may appear more than once (a wide root). Nodes
  /// already handed out and not yet reported count as visited (virtual loss),
  /// so a batch spreads out. Fewer than `n`, or none, while the only work left
  /// waits on results in flight (call again after the next Report). Empty with
  /// nothing in flight means the search is over (Done()).
  virtual std::vector<int> NextBatch(int n) = 0;
  /// Records a proposal as a child of `parent` (a measured node, normally one
  /// NextBatch returned). Returns its node id, or -1 when search memory has
  /// seen `source_hash` before (anywhere in the tree) or the same (parent,
  /// move) pair: it must not be measured again. A -1 settles the expansion
  /// as an attempt that produced nothing: after `prune_after` of them in a
  /// row the parent gets no new children (its proposer only repeats itself),
  /// so duplicates cannot keep the search going forever.
  virtual int AddChild(int parent, const std::string& move, const std::string& source_hash) = 0;
  /// The proposer had no new idea at `parent`: it gets no new children, and
  /// closes once its children are closed (at once when it has none).
  virtual void NoProposal(int parent) = 0;
  /// The result of node `node` (a child added earlier and not yet reported),
  /// in any order. Throws kopt::Error for a node that is not pending, a
  /// kPending result, or a measured objective that is not positive and finite.
  virtual void Report(int node, const NodeResult& result) = 0;
  /// Ends the search: NextBatch returns nothing afterwards.
  virtual void End() = 0;

  virtual const SearchTree& tree() const = 0;
  /// The measured node with the lowest objective (0, the root, at first;
  /// ties go to the lowest id).
  virtual int Best() const = 0;
  /// True once the root is closed: nothing will be expanded again.
  bool Done() const { return tree().size() > 0 && tree().node(0).closed; }
};

/// "mcts" (default), "greedy", "beam", "random" or "sweep" (every proposal a
/// child of the root, none refined); throws kopt::Error naming
/// the choices for any other name, or naming the option out of range.
std::unique_ptr<SearchPolicy> MakeSearchPolicy(const std::string& name,
                                               const SearchOptions& options);

/// The names MakeSearchPolicy accepts, for --help.
std::vector<std::string> SearchPolicyNames();

}  // namespace kopt
