// Beam search in generations: each of the generation's nodes (the root at
// first) is asked for `beam_branch` children; once all of them are reported,
// the best `beam_width` measured open ones among those children form the next
// generation. The search ends when a generation leaves none.
#include <algorithm>
#include <deque>

#include "search/tree_policy.h"

namespace kopt {
namespace {

class Beam : public TreePolicy {
 public:
  using TreePolicy::TreePolicy;
  std::string Name() const override { return "beam"; }

 protected:
  void OnBegin() override { StartGeneration({0}); }

  void Choose(int n, std::vector<int>& out) override {
    while (static_cast<int>(out.size()) < n) {
      if (slots_.empty()) {
        if (tree().node(0).in_flight > 0) return;  // the generation is still being measured
        std::vector<int> next = NextGeneration();
        if (next.empty()) {
          Close(0, "beam: the last generation left no measured open child");
          return;
        }
        StartGeneration(next);
      }
      int id = slots_.front();
      slots_.pop_front();
      if (!Expandable(id)) continue;
      Handout(id);
      out.push_back(id);
    }
  }

 private:
  /// Slots go round the members, so a partial batch spreads over them.
  void StartGeneration(const std::vector<int>& members) {
    members_ = members;
    slots_.clear();
    for (int r = 0; r < options().beam_branch; ++r) {
      for (int m : members_) slots_.push_back(m);
    }
  }

  std::vector<int> NextGeneration() const {
    std::vector<int> candidates;
    for (int m : members_) {
      for (int c : tree().node(m).children) {
        if (Expandable(c)) candidates.push_back(c);
      }
    }
    std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      double oa = tree().node(a).objective, ob = tree().node(b).objective;
      return oa != ob ? oa < ob : a < b;
    });
    if (static_cast<int>(candidates.size()) > options().beam_width) {
      candidates.resize(options().beam_width);
    }
    return candidates;
  }

  std::vector<int> members_;
  std::deque<int> slots_;
};

}  // namespace

std::unique_ptr<SearchPolicy> MakeBeamPolicy(const SearchOptions& options) {
  return std::make_unique<Beam>(options);
}

}  // namespace kopt
