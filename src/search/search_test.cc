#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "search/search_policy.h"
#include "search/search_tree.h"

namespace kopt {
namespace {

// ---------------------------------------------------------------------------
// Synthetic landscapes: an implicit tree in which a node is named by the path
// of child indices from the root, and its i-th child is what the proposer
// offers when asked for the i-th time.

/// One child as the synthetic proposer offers it.
struct Point {
  std::string move;
  std::string source;  ///< equal sources are duplicates for search memory
  NodeState state = NodeState::kMeasured;
  double objective = 1;
};

using Path = std::vector<int>;
/// The i-th child of the node at `path`; nullopt when the proposer has no more ideas there.
using Landscape = std::function<std::optional<Point>(const Path& path, int i)>;

std::string PathName(const Path& path) {
  std::string s = "r";
  for (int i : path) s += "." + std::to_string(i);
  return s;
}

/// A deterministic number in [0, 1) for a path and a salt (splitmix64).
double Hash01(const Path& path, std::uint64_t salt = 0) {
  std::uint64_t x = 0x9e3779b97f4a7c15ull ^ salt;
  for (int i : path) {
    x += static_cast<std::uint64_t>(i) + 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
  }
  return static_cast<double>(x >> 11) / static_cast<double>(1ull << 53);
}

Path Child(Path path, int i) {
  path.push_back(i);
  return path;
}

/// A measured child with a unique move and source.
Point At(const Path& parent, int i, double objective) {
  return Point{"m" + std::to_string(i), PathName(Child(parent, i)), NodeState::kMeasured,
               objective};
}

// ---------------------------------------------------------------------------
// The driver plays the optimization loop against a policy.

struct DriveOptions {
  int budget = 60;  ///< children created (each one is measured)
  int batch = 1;
  /// Results kept in flight after each batch; the others are reported newest
  /// first (so with batch > 1 reports arrive out of order).
  int hold = 0;
};

struct Drive {
  int created = 0;
  int duplicates = 0;
  int no_proposals = 0;
  bool finished = false;  ///< NextBatch came back empty with nothing in flight
  double best = 0;        ///< objective of policy.Best()
  std::vector<std::vector<int>> batches;
  std::map<int, Path> path_of;  ///< search node -> landscape path
};

class Driver {
 public:
  Driver(SearchPolicy& policy, Landscape land, double root_objective = 1.0)
      : policy_(policy), land_(std::move(land)), root_objective_(root_objective) {}

  /// Called after each NextBatch with its ids, before any proposal is added.
  std::function<void(const std::vector<int>&)> on_batch;

  Drive Run(const DriveOptions& o) {
    Drive d;
    policy_.Begin(root_objective_, PathName({}));
    d.path_of[0] = {};
    std::deque<int> pending;
    std::set<std::string> measured_sources = {PathName({})};
    std::set<int> no_proposal_nodes;
    for (int round = 0; round < 100000; ++round) {
      if (d.created >= o.budget) break;
      std::vector<int> ids = policy_.NextBatch(o.batch);
      if (ids.empty()) {
        if (pending.empty()) {
          d.finished = true;
          break;
        }
        while (!pending.empty()) Report(pending, d);
        continue;
      }
      d.batches.push_back(ids);
      for (int id : ids) {
        const SearchNode& n = policy_.tree().node(id);
        EXPECT_EQ(n.state, NodeState::kMeasured) << "handed out node " << id;
        EXPECT_FALSE(n.closed) << "handed out closed node " << id << ": " << n.closed_why;
        EXPECT_FALSE(no_proposal_nodes.count(id))
            << "handed out node " << id << " after NoProposal";
      }
      if (on_batch) on_batch(ids);
      for (int id : ids) {
        const Path& path = d.path_of.at(id);
        std::optional<Point> p = land_(path, next_child_[id]++);
        if (!p) {
          policy_.NoProposal(id);
          no_proposal_nodes.insert(id);
          ++d.no_proposals;
          continue;
        }
        int c = policy_.AddChild(id, p->move, p->source);
        if (c < 0) {
          ++d.duplicates;
          continue;
        }
        EXPECT_TRUE(measured_sources.insert(p->source).second) << "source measured twice";
        d.path_of[c] = Child(path, next_child_[id] - 1);
        results_[c] = *p;
        pending.push_back(c);
        ++d.created;
      }
      while (static_cast<int>(pending.size()) > o.hold) Report(pending, d);
    }
    while (!pending.empty()) Report(pending, d);
    d.best = policy_.tree().node(policy_.Best()).objective;
    return d;
  }

 private:
  void Report(std::deque<int>& pending, Drive& d) {
    int c = pending.back();
    pending.pop_back();
    const Point& p = results_.at(c);
    policy_.Report(c, NodeResult{p.state, p.objective});
  }

  SearchPolicy& policy_;
  Landscape land_;
  double root_objective_;
  std::map<int, int> next_child_;
  std::map<int, Point> results_;
};

struct Played {
  std::unique_ptr<SearchPolicy> policy;
  Drive drive;
  const SearchTree& tree() const { return policy->tree(); }
};

Played Play(const std::string& name, const Landscape& land, const DriveOptions& o,
            SearchOptions options = {},
            std::function<void(const SearchPolicy&, const std::vector<int>&)> on_batch = {}) {
  Played p{MakeSearchPolicy(name, options), {}};
  Driver driver(*p.policy, land);
  if (on_batch) driver.on_batch = [&](const std::vector<int>& ids) { on_batch(*p.policy, ids); };
  p.drive = driver.Run(o);
  return p;
}

// ---------------------------------------------------------------------------
// Landscapes.

/// Deceptive: the root's best-looking child A (0.80) leads to a plateau
/// (0.72-0.80 at every depth, forever); a worse-looking child B (0.95) leads
/// through B1 (0.90) to B2 (0.35) and the optimum B3 (0.10). The other root
/// children are slower than the root and lead nowhere. `variant` moves A, B
/// and B1 among their siblings and reshuffles the noise.
Landscape Deceptive(int variant) {
  const int a = variant % 3;
  const int b = 3 + variant % 4;
  const int b1 = variant % 2;
  const std::uint64_t salt = static_cast<std::uint64_t>(variant) * 7919;
  return [=](const Path& path, int i) -> std::optional<Point> {
    const Path child = Child(path, i);
    const double h = Hash01(child, salt);
    if (path.empty()) {
      if (i >= 30) return std::nullopt;
      if (i == a) return At(path, i, 0.80);
      if (i == b) return At(path, i, 0.95);
      return At(path, i, 1.05 + 0.2 * h);
    }
    if (i >= 20) return std::nullopt;
    if (path[0] == a) return At(path, i, 0.72 + 0.08 * h);  // the plateau
    if (path[0] != b) return At(path, i, 1.05 + 0.2 * h);   // noise
    switch (path.size()) {
      case 1:
        return At(path, i, i == b1 ? 0.90 : 0.96 + 0.04 * h);
      case 2:
        if (path[1] != b1) return At(path, i, 0.96 + 0.04 * h);
        return At(path, i, i == 0 ? 0.35 : 0.90 + 0.05 * h);
      case 3:
        if (path[1] != b1 || path[2] != 0) return At(path, i, 0.90 + 0.05 * h);
        return At(path, i, i == 0 ? 0.10 : 0.30 + 0.05 * h);
      default:
        return At(path, i, 0.10 + 0.02 * h);
    }
  };
}

// ---------------------------------------------------------------------------
// More landscapes, and a check of every node's statistics.

/// Every node has children forever, measured at 0.6-1.4 (no failures).
std::optional<Point> Rolling(const Path& path, int i) {
  return At(path, i, 0.6 + 0.8 * Hash01(Child(path, i), 17));
}

/// Three children per node down to depth 3 (39 nodes), then none.
std::optional<Point> Finite(const Path& path, int i) {
  if (path.size() >= 3 || i >= 3) return std::nullopt;
  return At(path, i, 0.5 + Hash01(Child(path, i), 5));
}

/// Child i scales its parent by 0.90, 0.95 or 1.00, down to depth 6: the best
/// is 0.9^6 along the path of first children.
std::optional<Point> Chain(const Path& path, int i) {
  if (path.size() >= 6 || i >= 3) return std::nullopt;
  double objective = 1;
  for (int j : Child(path, i)) objective *= 0.90 + 0.05 * j;
  return At(path, i, objective);
}

/// ceil(k_d * max(1, n)^alpha) restated from SearchOptions' comment.
int WidthBound(const SearchOptions& o, const SearchNode& n, int visits) {
  double k = std::max(o.widen_k_min, o.widen_k_root * std::pow(o.depth_decay, n.depth));
  return static_cast<int>(std::ceil(k * std::pow(std::max(1, visits), o.widen_alpha) - 1e-9));
}

/// Recomputes every node's statistics from the results alone and compares;
/// call with nothing in flight.
void ExpectConsistent(const SearchPolicy& policy, const SearchOptions& o = {}) {
  const SearchTree& t = policy.tree();
  const double root = t.node(0).objective;
  double lo = 0, hi = 0;
  for (const SearchNode& n : t.nodes()) {
    if (n.state != NodeState::kMeasured) continue;
    lo = std::min(lo, std::log(root / n.objective));
    hi = std::max(hi, std::log(root / n.objective));
  }
  auto penalty = [&](NodeState s) {
    switch (s) {
      case NodeState::kBuildFailed:
        return o.penalty_build_failed;
      case NodeState::kIncorrect:
        return o.penalty_incorrect;
      case NodeState::kCrashed:
        return o.penalty_crashed;
      case NodeState::kTimedOut:
        return o.penalty_timed_out;
      default:
        return 0.0;
    }
  };
  std::vector<double> reward(t.size()), sum(t.size());
  std::vector<int> visits(t.size());
  int best = 0;
  for (int id = t.size() - 1; id >= 0; --id) {  // children have larger ids than parents
    const SearchNode& n = t.node(id);
    EXPECT_EQ(n.in_flight, 0) << "node " << id;
    if (n.state == NodeState::kMeasured) {
      reward[id] = hi > lo ? (std::log(root / n.objective) - lo) / (hi - lo) : 0.5;
      EXPECT_NEAR(n.reward, reward[id], 1e-9) << "node " << id;
      if (n.objective < t.node(best).objective ||
          (n.objective == t.node(best).objective && id < best)) {
        best = id;
      }
    } else if (n.state != NodeState::kPending) {
      reward[id] = penalty(n.state);
      EXPECT_EQ(n.reward, reward[id]);
      EXPECT_TRUE(n.closed) << "failed node " << id << " is a leaf and closed";
    }
    visits[id] = n.state == NodeState::kPending ? 0 : 1;
    sum[id] = reward[id];
    for (int c : n.children) {
      visits[id] += visits[c];
      sum[id] += sum[c];
    }
    EXPECT_EQ(n.visits, visits[id]) << "node " << id;
    EXPECT_NEAR(n.value_sum, sum[id], 1e-9) << "node " << id;
  }
  EXPECT_EQ(policy.Best(), best);
}

TEST(SearchTree, MemoryPathsAndStableDump) {
  SearchTree t;
  t.Reset(2.0, "h0");
  EXPECT_EQ(t.AddChild(0, "x", "h1"), 1);
  EXPECT_EQ(t.AddChild(0, "y", "h1"), -1) << "same source hash elsewhere";
  EXPECT_EQ(t.AddChild(0, "x", "h2"), -1) << "same (parent, move)";
  EXPECT_EQ(t.AddChild(0, "z", "h0"), -1) << "the root's own source";
  EXPECT_EQ(t.AddChild(1, "x", "h2"), 2) << "the same move from another parent is new";
  EXPECT_EQ(t.AddChild(0, "w", ""), 3);
  EXPECT_EQ(t.AddChild(0, "v", ""), 4) << "empty hashes are not remembered";
  EXPECT_EQ(t.AddChild(1, "y", "h5"), 5);
  EXPECT_THROW(t.AddChild(42, "q", "h9"), Error);
  EXPECT_EQ(t.size(), 6);
  EXPECT_TRUE(t.SeenSource("h2"));
  EXPECT_FALSE(t.SeenSource(""));
  EXPECT_TRUE(t.SeenMove(1, "x"));
  EXPECT_FALSE(t.SeenMove(2, "x"));
  EXPECT_EQ(t.PathTo(2), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t.node(2).depth, 2);
  EXPECT_EQ(t.Subtree(1), (std::vector<int>{1, 2, 5}));
  t.mutable_node(1).state = NodeState::kMeasured;
  t.mutable_node(1).objective = 1.0 / 3;
  t.mutable_node(3).state = NodeState::kCrashed;
  t.mutable_node(3).closed = true;
  EXPECT_EQ(t.Dump(),
            "0 <- -1 [] measured 2.000000 visits=0\n"
            "  1 <- 0 [x] measured 0.333333 visits=0\n"
            "    2 <- 1 [x] pending - visits=0\n"
            "    5 <- 1 [y] pending - visits=0\n"
            "  3 <- 0 [w] crashed - visits=0 closed\n"
            "  4 <- 0 [v] pending - visits=0\n");
}

TEST(SearchPolicy, NamesOptionsAndMisuse) {
  EXPECT_EQ(SearchPolicyNames(), (std::vector<std::string>{"mcts", "greedy", "beam", "random", "sweep"}));
  for (const std::string& name : SearchPolicyNames()) {
    EXPECT_EQ(MakeSearchPolicy(name, {})->Name(), name);
  }
  try {
    MakeSearchPolicy("nope", {});
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    std::string what = e.what();
    for (const char* word : {"nope", "mcts", "greedy", "beam", "random"}) {
      EXPECT_NE(what.find(word), std::string::npos) << what;
    }
  }
  auto bad = [](auto change, const char* option) {
    SearchOptions o;
    change(o);
    try {
      MakeSearchPolicy("mcts", o);
      ADD_FAILURE() << option << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(option), std::string::npos) << e.what();
    }
  };
  bad([](SearchOptions& o) { o.widen_alpha = 1.5; }, "widen_alpha");
  bad([](SearchOptions& o) { o.penalty_crashed = 0.3; }, "penalty_crashed");
  bad([](SearchOptions& o) { o.prune_after = 0; }, "prune_after");
  bad([](SearchOptions& o) { o.beam_width = 0; }, "beam_width");
  bad([](SearchOptions& o) { o.max_backup = -0.1; }, "max_backup");

  auto p = MakeSearchPolicy("mcts", {});
  EXPECT_THROW(p->NextBatch(1), Error) << "before Begin";
  EXPECT_THROW(p->Begin(0), Error);
  p->Begin(1.0);
  EXPECT_EQ(p->NextBatch(1), std::vector<int>{0});
  int c = p->AddChild(0, "a", "ha");
  EXPECT_THROW(p->AddChild(c, "b", "hb"), Error) << "a pending node takes no children";
  EXPECT_THROW(p->Report(c, {NodeState::kPending, 0}), Error);
  EXPECT_THROW(p->Report(c, {NodeState::kMeasured, std::nan("")}), Error);
  p->Report(c, {NodeState::kMeasured, 0.5});
  EXPECT_THROW(p->Report(c, {NodeState::kMeasured, 0.5}), Error) << "reported twice";
  EXPECT_THROW(p->Report(0, {NodeState::kMeasured, 0.5}), Error) << "the root";
  int unasked = p->AddChild(0, "u", "hu");  // nobody asked NextBatch for it
  EXPECT_EQ(p->tree().node(0).in_flight, 1);
  p->Report(unasked, {NodeState::kMeasured, 0.7});
  ExpectConsistent(*p);
  p->End();
  EXPECT_TRUE(p->NextBatch(4).empty()) << "after End";
}

TEST(SearchPolicy, DeceptiveLandscapeMctsFindsWhatGreedyMisses) {
  const int kSeeds = 10;
  int mcts_solved = 0, greedy_solved = 0, batched_solved = 0;
  std::string mcts_bests, greedy_bests;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    SearchOptions options;
    options.seed = seed;
    DriveOptions o;
    o.budget = 60;
    Drive m = Play("mcts", Deceptive(seed), o, options).drive;
    Drive g = Play("greedy", Deceptive(seed), o, options).drive;
    o.batch = 4;
    o.hold = 4;
    Drive b = Play("mcts", Deceptive(seed), o, options).drive;
    mcts_solved += m.best <= 0.105;
    greedy_solved += g.best <= 0.105;
    batched_solved += b.best <= 0.105;
    mcts_bests += " " + std::to_string(m.best);
    greedy_bests += " " + std::to_string(g.best);
    EXPECT_EQ(m.created, 60);
    EXPECT_EQ(g.created, 60);
  }
  std::printf(
      "deceptive landscape, 60 evaluations: mcts %d/%d (batches of 4, pipelined: %d/%d), greedy "
      "%d/%d\n",
      mcts_solved, kSeeds, batched_solved, kSeeds, greedy_solved, kSeeds);
  EXPECT_GE(mcts_solved, 8) << mcts_bests;
  EXPECT_GE(batched_solved, 6);
  EXPECT_EQ(greedy_solved, 0) << greedy_bests;
}

TEST(Mcts, ProgressiveWideningBoundsChildrenWideAtTheRoot) {
  SearchOptions options;
  for (int batch : {1, 4}) {
    int checked = 0;
    auto check = [&](const SearchPolicy& p, const std::vector<int>& ids) {
      std::map<int, int> count;
      for (int id : ids) ++count[id];
      for (auto [id, k] : count) {
        const SearchNode& n = p.tree().node(id);
        EXPECT_LE(static_cast<int>(n.children.size()) + k,
                  WidthBound(options, n, n.visits + n.in_flight))
            << "node " << id << " batch " << batch;
        ++checked;
      }
    };
    DriveOptions o;
    o.budget = 120;
    o.batch = batch;
    o.hold = batch == 1 ? 0 : 3;
    Played p = Play("mcts", Rolling, o, options, check);
    EXPECT_GT(checked, 30);
    const SearchTree& t = p.tree();
    size_t depth2_max = 0;
    int deepest = 0;
    for (const SearchNode& n : t.nodes()) {
      EXPECT_LE(static_cast<int>(n.children.size()), WidthBound(options, n, n.visits))
          << "node " << n.id;
      if (n.depth == 2) depth2_max = std::max(depth2_max, n.children.size());
      deepest = std::max(deepest, n.depth);
    }
    EXPECT_GT(t.node(0).children.size(), 2 * depth2_max) << t.Dump();
    EXPECT_GE(t.node(0).children.size(), 15u);
    EXPECT_GE(deepest, 4) << "narrow deep in the tree, so it goes deep";
    ExpectConsistent(*p.policy, options);
  }
}

/// Root child 0 looks best (0.9) but everything below it fails to build; the
/// rest is measured at 0.95-1.05 at every depth.
std::optional<Point> FailingBranch(const Path& path, int i) {
  Point p = At(path, i, 0.95 + 0.1 * Hash01(Child(path, i), 3));
  if (path.empty() && i == 0) p.objective = 0.9;
  if (!path.empty() && path[0] == 0) p.state = NodeState::kBuildFailed;
  return p;
}

TEST(SearchPolicy, SubtreeThatKeepsFailingIsClosed) {
  SearchOptions options;
  DriveOptions o;
  o.budget = 60;
  // Greedy keeps expanding the best node until the pruning rule closes it.
  Played g = Play("greedy", FailingBranch, o, options);
  const SearchNode& gf = g.tree().node(1);
  ASSERT_EQ(gf.move, "m0");
  EXPECT_TRUE(gf.closed);
  EXPECT_EQ(static_cast<int>(gf.children.size()), options.prune_after);
  EXPECT_NE(gf.closed_why.find("did not beat"), std::string::npos) << gf.closed_why;
  EXPECT_EQ(g.drive.created, 60) << "the search went on elsewhere";
  EXPECT_FALSE(g.policy->Done());

  Played m = Play("mcts", FailingBranch, o, options);
  const SearchNode& mf = m.tree().node(1);
  EXPECT_TRUE(mf.closed);
  EXPECT_LE(static_cast<int>(mf.children.size()), options.prune_after);
  for (int c : mf.children) EXPECT_EQ(m.tree().node(c).state, NodeState::kBuildFailed);
  EXPECT_EQ(m.drive.created, 60);
  ExpectConsistent(*m.policy, options);
  // Closed nodes were never handed out: the driver checks every batch.
}

TEST(SearchPolicy, TheRootIsNeverPrunedWhileItHasIdeas) {
  auto all_fail = [](const Path& path, int i) -> std::optional<Point> {
    Point p = At(path, i, 1);
    p.state = i % 2 ? NodeState::kCrashed : NodeState::kBuildFailed;
    return p;
  };
  SearchOptions narrow;
  narrow.widen_alpha = 0;  // the root's limit stays at 2: it must widen past it
  for (const SearchOptions& options : {SearchOptions{}, narrow}) {
    for (std::string name : {"mcts", "greedy", "random"}) {
      DriveOptions o;
      o.budget = 30;
      Played p = Play(name, all_fail, o, options);
      EXPECT_EQ(p.drive.created, 30) << name << ": ran to the budget";
      EXPECT_FALSE(p.tree().node(0).closed) << name;
      EXPECT_GE(p.tree().node(0).fruitless, 30) << name;
      ExpectConsistent(*p.policy, options);
    }
  }
  // Beam ends when a generation leaves nothing measured.
  Played b = Play("beam", all_fail, {});
  EXPECT_TRUE(b.drive.finished);
  EXPECT_EQ(b.drive.created, SearchOptions{}.beam_branch);
}

TEST(SearchPolicy, NoProposalClosesANodeOnceItsChildrenAreClosed) {
  auto p = MakeSearchPolicy("greedy", {});
  p->Begin(1.0, "root");
  ASSERT_EQ(p->NextBatch(1), std::vector<int>{0});
  int a = p->AddChild(0, "a", "ha");
  p->Report(a, {NodeState::kMeasured, 0.9});
  ASSERT_EQ(p->NextBatch(1), std::vector<int>{a});
  int b = p->AddChild(a, "b", "hb");
  p->NoProposal(0);  // the root has no more ideas, but its child a is open
  EXPECT_TRUE(p->tree().node(0).exhausted);
  EXPECT_FALSE(p->tree().node(0).closed);
  ASSERT_EQ(p->NextBatch(1), std::vector<int>{a});
  p->NoProposal(a);  // nor has a, but its child b is pending
  EXPECT_TRUE(p->tree().node(a).exhausted);
  EXPECT_FALSE(p->tree().node(a).closed);
  EXPECT_TRUE(p->NextBatch(1).empty()) << "only b's result can bring more work";
  EXPECT_FALSE(p->Done());
  p->Report(b, {NodeState::kTimedOut, 0});
  EXPECT_TRUE(p->tree().node(b).closed);
  EXPECT_TRUE(p->tree().node(a).closed);
  EXPECT_NE(p->tree().node(a).closed_why.find("no more ideas"), std::string::npos);
  EXPECT_TRUE(p->tree().node(0).closed) << "exhausted, and every child closed";
  EXPECT_TRUE(p->Done());
  EXPECT_TRUE(p->NextBatch(4).empty());
}

TEST(SearchPolicy, EveryPolicyEndsOnAFiniteLandscape) {
  for (const std::string& name : SearchPolicyNames()) {
    for (int batch : {1, 3}) {
      DriveOptions o;
      o.budget = 1000;
      o.batch = batch;
      o.hold = batch - 1;
      Played p = Play(name, Finite, o);
      EXPECT_TRUE(p.drive.finished) << name;
      EXPECT_TRUE(p.policy->Done()) << name;
      EXPECT_LE(p.drive.created, 39) << name;
      EXPECT_GT(p.drive.no_proposals, 0) << name;
      for (const SearchNode& n : p.tree().nodes()) EXPECT_TRUE(n.closed) << name << " " << n.id;
      ExpectConsistent(*p.policy);
    }
  }
}

/// Four knobs; a node is the multiset of knobs applied (up to three), so
/// knob orders that commute give the same source. Children 4-7 repeat the
/// moves of children 0-3 with a different source.
std::optional<Point> Transpositions(const Path& path, int i) {
  if (path.size() >= 3 || i >= 8) return std::nullopt;
  std::vector<int> knobs;
  for (int j : Child(path, i)) knobs.push_back(j % 4);
  std::sort(knobs.begin(), knobs.end());
  std::string source = "k";
  double objective = 1;
  for (int k : knobs) {
    source += std::to_string(k);
    objective *= 0.8 + 0.1 * k;
  }
  if (i >= 4) source += "'";
  return Point{"knob" + std::to_string(i % 4), source, NodeState::kMeasured, objective};
}

/// Root children 0-2 are leaves; every later proposal at the root repeats
/// child 0's source.
std::optional<Point> OnlyDuplicates(const Path& path, int i) {
  if (!path.empty()) return std::nullopt;
  Point p = At(path, i, 0.9 + 0.01 * i);
  if (i >= 3) p.source = PathName({0});
  return p;
}

TEST(SearchPolicy, SearchMemoryRejectsRepeatsAndTheSearchStillEnds) {
  for (const std::string& name : SearchPolicyNames()) {
    DriveOptions o;
    o.budget = 1000;
    Played p = Play(name, Transpositions, o);
    EXPECT_TRUE(p.drive.finished) << name;
    EXPECT_GT(p.drive.duplicates, 0) << name;
    EXPECT_LE(p.drive.created, 34) << name << ": distinct multisets of 1-3 of 4 knobs";
    EXPECT_EQ(p.tree().size(), 1 + p.drive.created) << "duplicates never enter the tree";
    std::set<std::string> sources;
    for (const SearchNode& n : p.tree().nodes()) {
      EXPECT_TRUE(sources.insert(n.source_hash).second) << name << " " << n.source_hash;
    }
    ExpectConsistent(*p.policy);

    Played d = Play(name, OnlyDuplicates, o);
    EXPECT_TRUE(d.drive.finished) << name;
    EXPECT_EQ(d.drive.created, 3) << name;
    if (name != "beam") {  // beam asks the root only beam_branch times
      SearchOptions defaults;
      EXPECT_EQ(d.drive.duplicates, defaults.prune_after) << name;
      EXPECT_NE(d.tree().node(0).closed_why.find("already-seen"), std::string::npos)
          << d.tree().node(0).closed_why;
    }
  }
}

/// Six root children that tie at 0.9; below them, three levels of objective,
/// so ties everywhere.
std::optional<Point> Ties(const Path& path, int i) {
  if (path.empty()) return i < 6 ? std::optional<Point>(At(path, i, 0.9)) : std::nullopt;
  return At(path, i, 0.7 + 0.1 * std::floor(3 * Hash01(Child(path, i), 11)));
}

TEST(SearchPolicy, SameSeedSameTreeOtherSeedOtherTree) {
  for (std::string name : {"mcts", "random"}) {
    for (int batch : {1, 4}) {
      DriveOptions o;
      o.budget = 50;
      o.batch = batch;
      o.hold = batch / 2;
      SearchOptions s7, s8;
      s7.seed = 7;
      s8.seed = 8;
      std::string a = Play(name, Ties, o, s7).tree().Dump();
      std::string b = Play(name, Ties, o, s7).tree().Dump();
      std::string c = Play(name, Ties, o, s8).tree().Dump();
      EXPECT_EQ(a, b) << name << " batch " << batch;
      EXPECT_NE(a, c) << name << " batch " << batch;
    }
  }
  // Greedy and beam draw nothing at random: ties go to the lowest id.
  for (std::string name : {"greedy", "beam"}) {
    SearchOptions s7, s8;
    s7.seed = 7;
    s8.seed = 8;
    EXPECT_EQ(Play(name, Ties, {}, s7).tree().Dump(), Play(name, Ties, {}, s8).tree().Dump());
  }
}

TEST(Mcts, BatchesSpreadOutAndReportsMayComeInAnyOrder) {
  auto p = MakeSearchPolicy("mcts", {});
  p->Begin(1.0, "root");
  // A fresh root: each expansion handed out counts as a visit, which raises
  // the root's own widening limit (1 visit: 2 children; 5 visits: 5).
  std::vector<int> first = p->NextBatch(4);
  EXPECT_EQ(first, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(p->tree().node(0).in_flight, 4);
  std::vector<int> kids;
  for (int i = 0; i < 4; ++i)
    kids.push_back(p->AddChild(0, "m" + std::to_string(i), "h" + std::to_string(i)));
  EXPECT_EQ(kids, (std::vector<int>{1, 2, 3, 4}));
  // Out of order, and a batch in between while three are still pending.
  p->Report(3, {NodeState::kMeasured, 0.8});
  std::vector<int> mid = p->NextBatch(4);
  ASSERT_FALSE(mid.empty());
  for (int id : mid) EXPECT_TRUE(id == 0 || id == 3) << "pending nodes are not expanded: " << id;
  std::vector<int> added;
  for (size_t i = 0; i < mid.size(); ++i) {
    added.push_back(p->AddChild(mid[i], "n" + std::to_string(i), "g" + std::to_string(i)));
  }
  p->Report(1, {NodeState::kMeasured, 0.85});
  p->Report(4, {NodeState::kMeasured, 0.85});
  p->Report(2, {NodeState::kCrashed, 0});
  for (int id : added) p->Report(id, {NodeState::kMeasured, 0.9});
  ExpectConsistent(*p);
  EXPECT_EQ(p->tree().node(0).visits, 1 + 4 + static_cast<int>(added.size()));
  EXPECT_EQ(p->Best(), 3);

  // A root at its widening limit with four tying children: one batch spreads
  // over distinct children, never the crashed one. In-flight expansions count
  // as visits that earned nothing, which lowers both halves of UCT: the value
  // (alone when exploration is 0) and the exploration bonus (alone when the
  // value is the subtree's best, max_backup 1).
  SearchOptions only_value, only_exploration;
  only_value.exploration = 0;
  only_exploration.max_backup = 1;
  for (SearchOptions o : {SearchOptions{}, only_value, only_exploration}) {
    o.widen_alpha = 0;  // the root keeps 4 children, depth 1 keeps 2
    o.widen_k_root = 4;
    auto q = MakeSearchPolicy("mcts", o);
    q->Begin(1.0, "root");
    ASSERT_EQ(q->NextBatch(4), (std::vector<int>{0, 0, 0, 0}));
    for (int i = 0; i < 4; ++i) q->AddChild(0, "m" + std::to_string(i), "h" + std::to_string(i));
    for (int i = 1; i <= 3; ++i) q->Report(i, {NodeState::kMeasured, 0.8});
    q->Report(4, {NodeState::kCrashed, 0});
    std::vector<int> spread = q->NextBatch(3);
    std::sort(spread.begin(), spread.end());
    EXPECT_EQ(spread, (std::vector<int>{1, 2, 3}))
        << "exploration " << o.exploration << ", max_backup " << o.max_backup;
  }
}

TEST(SearchPolicy, RewardsAreCalibratedAsTheExtremesMove) {
  SearchOptions o;
  auto p = MakeSearchPolicy("mcts", o);
  p->Begin(1.0);
  ASSERT_EQ(p->NextBatch(4), (std::vector<int>{0, 0, 0, 0}));
  int a = p->AddChild(0, "a", "ha");
  int b = p->AddChild(0, "b", "hb");
  int c = p->AddChild(0, "c", "hc");
  int d = p->AddChild(0, "d", "hd");
  auto node = [&](int id) { return p->tree().node(id); };

  p->Report(a, {NodeState::kMeasured, 0.5});  // raw log 2: the best, and the root the worst
  EXPECT_DOUBLE_EQ(node(a).reward, 1);
  EXPECT_DOUBLE_EQ(node(0).reward, 0);
  EXPECT_DOUBLE_EQ(node(0).value_sum, 1);
  p->Report(b, {NodeState::kMeasured, 2.0});  // raw -log 2: the new worst
  EXPECT_DOUBLE_EQ(node(a).reward, 1);
  EXPECT_DOUBLE_EQ(node(b).reward, 0);
  EXPECT_DOUBLE_EQ(node(0).reward, 0.5);
  EXPECT_DOUBLE_EQ(node(0).value_sum, 1.5);
  p->Report(c, {NodeState::kBuildFailed, 0});
  p->Report(d, {NodeState::kIncorrect, 0});
  EXPECT_DOUBLE_EQ(node(c).reward, o.penalty_build_failed);
  EXPECT_DOUBLE_EQ(node(d).reward, o.penalty_incorrect);
  EXPECT_LT(node(c).reward, node(b).reward) << "a failure scores below the slowest measurement";
  EXPECT_LT(node(d).reward, node(c).reward);
  EXPECT_NEAR(node(0).value_sum, 1.5 + o.penalty_build_failed + o.penalty_incorrect, 1e-12);

  std::vector<int> next = p->NextBatch(1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_TRUE(next[0] == 0 || next[0] == a || next[0] == b) << "failed nodes are leaves";
  int e = p->AddChild(next[0], "e", "he");
  p->Report(e, {NodeState::kMeasured, 0.25});  // raw log 4: the new best
  const double span = std::log(4) + std::log(2);
  EXPECT_NEAR(node(a).reward, 2 * std::log(2) / span, 1e-12);
  EXPECT_NEAR(node(0).reward, std::log(2) / span, 1e-12);
  EXPECT_DOUBLE_EQ(node(e).reward, 1);
  EXPECT_DOUBLE_EQ(node(b).reward, 0);
  EXPECT_NEAR(node(0).value_sum,
              (std::log(2) + 2 * std::log(2) + 0 + span) / span + o.penalty_build_failed +
                  o.penalty_incorrect,
              1e-12);
  EXPECT_EQ(p->Best(), e);
  ExpectConsistent(*p, o);
}

TEST(SearchPolicy, EveryPolicySolvesASimpleLandscape) {
  const double optimum = std::pow(0.9, 6);
  for (const std::string& name : SearchPolicyNames()) {
    DriveOptions o;
    o.budget = 150;
    std::vector<int> depths;
    auto record = [&](const SearchPolicy& p, const std::vector<int>& ids) {
      for (int id : ids) depths.push_back(p.tree().node(id).depth);
    };
    Played p = Play(name, Chain, o, {}, record);
    if (name == "random") {
      EXPECT_LT(p.drive.best, 0.75) << name;
    } else if (name == "sweep") {
      // One level only: the best child of the root, and nothing deeper.
      EXPECT_NEAR(p.drive.best, 0.9, 1e-12) << name;
      for (int d : depths) EXPECT_EQ(d, 0) << "a sweep expands only the root";
    } else {
      EXPECT_NEAR(p.drive.best, optimum, 1e-12) << name;
    }
    EXPECT_EQ(p.tree().node(p.policy->Best()).objective, p.drive.best);
    if (name == "beam") {
      EXPECT_TRUE(std::is_sorted(depths.begin(), depths.end())) << "generation after generation";
      std::map<int, std::set<int>> members;  // depth -> nodes expanded
      for (const auto& batch : p.drive.batches) {
        for (int id : batch) members[p.tree().node(id).depth].insert(id);
      }
      EXPECT_EQ(members.size(), 7u) << "depths 0-6; depth 6 has no children";
      for (const auto& [depth, ids] : members) {
        EXPECT_LE(static_cast<int>(ids.size()), SearchOptions{}.beam_width) << "depth " << depth;
      }
      EXPECT_TRUE(p.drive.finished) << "the last generation has no children";
    }
    ExpectConsistent(*p.policy);
  }
}

}  // namespace
}  // namespace kopt
