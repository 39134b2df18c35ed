// Random: each expansion goes to a uniformly random measured open node. An
// ablation baseline that shows what the other policies' choices are worth.
#include "search/tree_policy.h"

namespace kopt {
namespace {

class RandomPolicy : public TreePolicy {
 public:
  using TreePolicy::TreePolicy;
  std::string Name() const override { return "random"; }

 protected:
  void Choose(int n, std::vector<int>& out) override {
    std::vector<int> open;
    for (const SearchNode& node : tree().nodes()) {
      if (Expandable(node.id)) open.push_back(node.id);
    }
    if (open.empty()) return;
    for (int i = 0; i < n; ++i) {
      int id = open[rng()() % open.size()];
      Handout(id);
      out.push_back(id);
    }
  }
};

}  // namespace

std::unique_ptr<SearchPolicy> MakeRandomPolicy(const SearchOptions& options) {
  return std::make_unique<RandomPolicy>(options);
}

}  // namespace kopt
