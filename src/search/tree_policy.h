// What every search policy shares: the tree and its search memory, results
// and their backup (calibrated rewards, visits, in-flight counts), dead-end
// pruning and closing. A policy derives from TreePolicy and only chooses the
// nodes to expand. Internal to src/search/.
//
// Backup: a result counts at its node and every ancestor (visits, sums of raw
// log rewards, failure penalties, best raw reward). Rewards are normalized over
// the extremes of every measurement so far, the root's included, and recomputed
// from the raw sums whenever the extremes move, so they stay exact.
//
// Closing, the only way a search ends:
//  - a failed node is a closed leaf;
//  - a node (not the root) whose last `prune_after` subtree results failed or
//    did not beat it by `prune_min_gain` closes with its subtree;
//  - NoProposal, or `prune_after` duplicates in a row (AddChild -1), leave a
//    node exhausted: no new children, and closed once every child is closed;
//  - the root closes only that way: a run of bad results never ends the
//    search while the proposer has ideas (the budget does).
// A duplicate settles its handed-out expansion without a visit and counts only
// at its parent, and only toward exhaustion: it says nothing about the subtree.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "search/search_policy.h"
#include "search/search_tree.h"

namespace kopt {

class TreePolicy : public SearchPolicy {
 public:
  explicit TreePolicy(const SearchOptions& options) : options_(options) {}

  void Begin(double root_objective, const std::string& root_hash) override;
  std::vector<int> NextBatch(int n) final;
  int AddChild(int parent, const std::string& move, const std::string& source_hash) override;
  void NoProposal(int parent) override;
  void Report(int node, const NodeResult& result) override;
  void End() override { ended_ = true; }

  const SearchTree& tree() const override { return tree_; }
  int Best() const override { return best_; }

 protected:
  /// Appends up to `n` nodes to expand to `out`, calling Handout on each as
  /// it is chosen (so later choices see it in flight). Stops early when the
  /// only work left waits on results.
  virtual void Choose(int n, std::vector<int>& out) = 0;
  /// Called at the end of Begin, once the tree holds the root.
  virtual void OnBegin() {}

  /// Marks one expansion of `id` as handed out: `id` and its ancestors count
  /// it as a visit until it is reported or dropped.
  void Handout(int id);
  /// Closes `id` and its subtree, then every ancestor left exhausted with all
  /// children closed.
  void Close(int id, const std::string& why);
  /// Measured, not closed, and its proposer still has ideas.
  bool Expandable(int id) const;
  /// Expansions of `id` handed out and not yet turned into a child or dropped.
  int Awaiting(int id) const { return awaiting_.at(id); }
  /// `raw` (a log reward) on the normalized scale in force now.
  double Normalize(double raw) const;

  const SearchOptions& options() const { return options_; }
  std::mt19937_64& rng() { return rng_; }

 private:
  void RequireBegun(const char* call) const;
  /// Settles one awaited expansion of `id` that produced no child.
  void Drop(int id);
  void MarkExhausted(int id, const std::string& why);
  /// Closes `id` and then its ancestors while each is exhausted with every
  /// child closed.
  void CloseSpent(int id);
  double Penalty(NodeState s) const;
  /// Recomputes reward and value_sum of every node on the current scale.
  void Rescale();

  SearchOptions options_;
  SearchTree tree_;
  std::mt19937_64 rng_;
  bool begun_ = false;
  bool ended_ = false;
  int best_ = 0;
  double raw_lo_ = 0;  ///< extremes of raw_reward over measured nodes (the root's 0 included)
  double raw_hi_ = 0;
  std::vector<int> awaiting_;
  std::vector<std::string> exhausted_why_;
};

/// The policies, each in its own file; MakeSearchPolicy picks one by name.
std::unique_ptr<SearchPolicy> MakeMctsPolicy(const SearchOptions& options);
std::unique_ptr<SearchPolicy> MakeGreedyPolicy(const SearchOptions& options);
std::unique_ptr<SearchPolicy> MakeBeamPolicy(const SearchOptions& options);
std::unique_ptr<SearchPolicy> MakeRandomPolicy(const SearchOptions& options);
std::unique_ptr<SearchPolicy> MakeSweepPolicy(const SearchOptions& options);

}  // namespace kopt
