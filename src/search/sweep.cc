// Sweep: every proposal is a child of the root, measured once, never refined.
// What `kopt eval` and `kopt bench` run (the replay proposer over files), and
// how a user ranks a folder of attempts with `kopt optimize --search sweep`.
#include "search/tree_policy.h"

namespace kopt {
namespace {

class Sweep : public TreePolicy {
 public:
  using TreePolicy::TreePolicy;
  std::string Name() const override { return "sweep"; }

  void Report(int node, const NodeResult& result) override {
    TreePolicy::Report(node, result);
    // A child is a leaf: measured once, never refined.
    if (node != 0 && !tree().node(node).closed) Close(node, "a sweep measures each proposal once");
  }

 protected:
  void Choose(int n, std::vector<int>& out) override {
    if (!Expandable(0)) return;
    for (int i = 0; i < n; ++i) {
      Handout(0);
      out.push_back(0);
    }
  }
};

}  // namespace

std::unique_ptr<SearchPolicy> MakeSweepPolicy(const SearchOptions& options) {
  return std::make_unique<Sweep>(options);
}

}  // namespace kopt
