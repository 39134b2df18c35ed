// Greedy: always expand the best measured open node (ties to the lowest id).
// An ablation baseline: a hill climber with the shared pruning as patience.
#include "search/tree_policy.h"

namespace kopt {
namespace {

class Greedy : public TreePolicy {
 public:
  using TreePolicy::TreePolicy;
  std::string Name() const override { return "greedy"; }

 protected:
  void Choose(int n, std::vector<int>& out) override {
    int best = -1;
    for (const SearchNode& node : tree().nodes()) {
      if (!Expandable(node.id)) continue;
      if (best < 0 || node.objective < tree().node(best).objective) best = node.id;
    }
    if (best < 0) return;
    for (int i = 0; i < n; ++i) {
      Handout(best);
      out.push_back(best);
    }
  }
};

}  // namespace

std::unique_ptr<SearchPolicy> MakeGreedyPolicy(const SearchOptions& options) {
  return std::make_unique<Greedy>(options);
}

}  // namespace kopt
