// Monte Carlo tree search with progressive widening, asymmetric branching,
// calibrated log rewards, a mixmax backup and virtual loss for batches.
//
// One expansion: from the root, a node below its widening limit (and with
// ideas left) is expanded; otherwise UCT descends to a measured open child.
// A node with nothing to give right now is skipped for the rest of the batch:
// when its subtree has results in flight it waits for them; when it has none
// it is spent (every child closed at its widening limit) and closes, except
// the root, which widens past its limit instead, so the search stops only when
// the proposer has nothing left (or the budget runs out).
#include <cmath>
#include <set>

#include "search/tree_policy.h"

namespace kopt {
namespace {

class Mcts : public TreePolicy {
 public:
  using TreePolicy::TreePolicy;
  std::string Name() const override { return "mcts"; }

 protected:
  void Choose(int n, std::vector<int>& out) override {
    std::set<int> waiting;  // nodes whose subtree has nothing to give until a result arrives
    while (static_cast<int>(out.size()) < n) {
      int id = SelectOne(waiting);
      if (id < 0) return;
      Handout(id);
      out.push_back(id);
    }
  }

 private:
  /// ceil(k_d * max(1, n)^alpha), n counting expansions in flight.
  int WidthLimit(const SearchNode& node) const {
    const SearchOptions& o = options();
    double k = std::max(o.widen_k_min, o.widen_k_root * std::pow(o.depth_decay, node.depth));
    double n = std::max(1, node.visits + node.in_flight);
    return static_cast<int>(std::ceil(k * std::pow(n, o.widen_alpha) - 1e-9));
  }

  bool BelowWidthLimit(const SearchNode& node) const {
    return static_cast<int>(node.children.size()) + Awaiting(node.id) < WidthLimit(node);
  }

  /// Mixmax value: results in flight count as visits that earned 0 (virtual
  /// loss), which moves the rest of a batch elsewhere.
  double Value(const SearchNode& node) const {
    double n = node.visits + node.in_flight;
    double mean = node.value_sum / n;
    double best = node.measured_count > 0 ? Normalize(node.best_raw) : 0;
    return (1 - options().max_backup) * mean + options().max_backup * best;
  }

  int SelectOne(std::set<int>& waiting) {
    const SearchTree& t = tree();
    while (!t.node(0).closed) {
      int v = 0;
      while (true) {
        const SearchNode& node = t.node(v);
        if (Expandable(v) && BelowWidthLimit(node)) return v;
        int child = BestChild(node, waiting);
        if (child >= 0) {
          v = child;
          continue;
        }
        if (v == 0) {
          // Nothing anywhere in flight and ideas left: widen past the limit
          // rather than stop the search.
          if (Expandable(0) && node.in_flight == 0) return 0;
          return -1;
        }
        if (node.in_flight > 0) {
          waiting.insert(v);
        } else {
          Close(v, "at its widening limit with every child closed");
        }
        break;  // choose again from the root
      }
    }
    return -1;
  }

  /// The UCT choice among measured open children not waiting; ties drawn at
  /// random. -1 when there is none.
  int BestChild(const SearchNode& node, const std::set<int>& waiting) {
    const SearchTree& t = tree();
    const double log_n = std::log(std::max(1, node.visits + node.in_flight));
    double best_score = -INFINITY;
    std::vector<int> ties;
    for (int c : node.children) {
      const SearchNode& child = t.node(c);
      if (child.state != NodeState::kMeasured || child.closed || waiting.count(c)) continue;
      double n = child.visits + child.in_flight;
      double score = Value(child) + options().exploration * std::sqrt(log_n / n);
      if (score > best_score + 1e-12) {
        best_score = score;
        ties.assign(1, c);
      } else if (score > best_score - 1e-12) {
        ties.push_back(c);
      }
    }
    if (ties.empty()) return -1;
    if (ties.size() == 1) return ties[0];
    return ties[rng()() % ties.size()];
  }
};

}  // namespace

std::unique_ptr<SearchPolicy> MakeMctsPolicy(const SearchOptions& options) {
  return std::make_unique<Mcts>(options);
}

}  // namespace kopt
