#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "report/tree_layout.h"

namespace kopt {
namespace {

TreeInputNode N(int id, int parent, double importance, bool pinned = false,
                std::string group = "correct") {
  TreeInputNode t;
  t.id = id;
  t.parent = parent;
  t.importance = importance;
  t.pinned = pinned;
  t.group = std::move(group);
  return t;
}

// A random search-like tree: wide near the root, deeper chains below.
std::vector<TreeInputNode> RandomTree(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<TreeInputNode> nodes;
  for (int i = 0; i < n; ++i) {
    TreeInputNode t;
    t.id = i;
    if (i > 0) {
      // Half the time a child of a recent node (chains), else of any node.
      const int lo = rng() % 2 ? std::max(0, i - 5) : 0;
      t.parent = lo + static_cast<int>(rng() % (i - lo));
    }
    t.importance = std::uniform_real_distribution<>(0.5, 2.0)(rng);
    t.group = rng() % 4 == 0 ? "incorrect" : "correct";
    nodes.push_back(t);
  }
  return nodes;
}

// Every node drawn or counted once; nodes and marks on one level never
// closer than a column; a drawn node's parent drawn; the pinned drawn.
void ExpectSound(const std::vector<TreeInputNode>& in, const TreeLayout& l,
                 const TreeLayoutOptions& o) {
  std::set<int> drawn;
  for (const auto& p : l.nodes)
    EXPECT_TRUE(drawn.insert(p.id).second) << "node " << p.id << " drawn twice";
  int counted = 0;
  for (const auto& m : l.more) {
    EXPECT_GT(m.hidden, 0);
    EXPECT_TRUE(drawn.count(m.parent)) << "a mark under a node not drawn";
    int by_group = 0;
    for (const auto& [g, c] : m.by_group) by_group += c;
    EXPECT_EQ(by_group, m.hidden);
    counted += m.hidden;
  }
  EXPECT_EQ(static_cast<int>(l.nodes.size()) + counted, static_cast<int>(in.size()));
  std::map<int, int> parent_of;
  for (const auto& t : in) parent_of[t.id] = t.parent;
  for (const auto& p : l.nodes) {
    if (p.parent >= 0) {
      EXPECT_TRUE(drawn.count(p.parent)) << p.id;
      EXPECT_EQ(p.parent, parent_of[p.id]);
    }
  }
  for (const auto& t : in) {
    if (t.pinned) {
      EXPECT_TRUE(drawn.count(t.id)) << "pinned " << t.id;
    }
  }
  // Positions by level.
  std::map<int, std::vector<double>> levels;
  for (const auto& p : l.nodes) {
    levels[static_cast<int>(std::lround(p.y))].push_back(p.x);
    EXPECT_GE(p.x, 0);
    EXPECT_LE(p.x, l.width);
    EXPECT_LE(p.y, l.height);
  }
  for (const auto& m : l.more) levels[static_cast<int>(std::lround(m.y))].push_back(m.x);
  for (auto& [y, xs] : levels) {
    std::sort(xs.begin(), xs.end());
    for (size_t i = 1; i < xs.size(); ++i)
      EXPECT_GE(xs[i] - xs[i - 1], o.column_px - 1e-9) << "overlap on the level at y=" << y;
  }
  // A child sits one level below its parent.
  std::map<int, double> y_of;
  for (const auto& p : l.nodes) y_of[p.id] = p.y;
  for (const auto& p : l.nodes) {
    if (p.parent >= 0) {
      EXPECT_NEAR(p.y - y_of[p.parent], o.level_px, 1e-9);
    }
  }
}

TEST(TreeLayout, SmallTreeIsDrawnWhole) {
  std::vector<TreeInputNode> in = {N(0, -1, 1.0), N(1, 0, 1.2), N(2, 0, 0.9), N(3, 1, 1.3),
                                   N(4, 1, 1.1)};
  TreeLayoutOptions o;
  TreeLayout l = LayoutTree(in, o);
  ASSERT_EQ(l.nodes.size(), 5u);
  EXPECT_TRUE(l.more.empty());
  EXPECT_EQ(l.columns, 3);  // leaves 3, 4 and 2
  EXPECT_EQ(l.levels, 3);
  ExpectSound(in, l, o);
  std::map<int, PlacedNode> at;
  for (const auto& p : l.nodes) at[p.id] = p;
  EXPECT_DOUBLE_EQ(at[1].x, (at[3].x + at[4].x) / 2);  // a parent over its children
  EXPECT_LT(at[3].x, at[4].x);                         // siblings in id order
  EXPECT_LT(at[1].x, at[2].x);
}

TEST(TreeLayout, EmptyAndSingle) {
  EXPECT_TRUE(LayoutTree({}).nodes.empty());
  TreeLayout one = LayoutTree({N(7, -1, 0)});
  ASSERT_EQ(one.nodes.size(), 1u);
  EXPECT_EQ(one.nodes[0].id, 7);
  EXPECT_EQ(one.columns, 1);
}

TEST(TreeLayout, WideRootKeepsTheBestChildrenAndCountsTheRest) {
  std::vector<TreeInputNode> in = {N(0, -1, 1.0)};
  for (int i = 1; i <= 100; ++i)
    in.push_back(N(i, 0, 1.0 + i / 1000.0, false, i % 3 ? "correct" : "incorrect"));
  TreeLayoutOptions o;
  o.max_columns = 10;
  TreeLayout l = LayoutTree(in, o);
  ExpectSound(in, l, o);
  EXPECT_LE(l.columns, 10);
  ASSERT_EQ(l.more.size(), 1u);
  EXPECT_EQ(l.more[0].parent, 0);
  EXPECT_EQ(l.more[0].hidden, 91);  // 9 children drawn, the mark takes the tenth column
  EXPECT_EQ(l.more[0].by_group.at("incorrect") + l.more[0].by_group.at("correct"), 91);
  std::set<int> drawn;
  for (const auto& p : l.nodes) drawn.insert(p.id);
  for (int i = 92; i <= 100; ++i)
    EXPECT_TRUE(drawn.count(i)) << "the most important children are drawn";
}

TEST(TreeLayout, PinnedPathIsAlwaysDrawn) {
  // A deep chain under a dull child of a wide root, its end pinned.
  std::vector<TreeInputNode> in = {N(0, -1, 1.0)};
  for (int i = 1; i <= 40; ++i) in.push_back(N(i, 0, 2.0));
  int parent = 5;
  for (int i = 41; i <= 60; ++i) {
    in.push_back(N(i, parent, 0.1, i == 60));
    parent = i;
  }
  TreeLayoutOptions o;
  o.max_columns = 8;
  TreeLayout l = LayoutTree(in, o);
  ExpectSound(in, l, o);
  std::set<int> drawn;
  for (const auto& p : l.nodes) drawn.insert(p.id);
  for (int i = 41; i <= 60; ++i) EXPECT_TRUE(drawn.count(i));
  EXPECT_TRUE(drawn.count(5));
  EXPECT_EQ(l.levels, 22);
}

TEST(TreeLayout, HundredsOfNodesStayWithinTheLimits) {
  for (unsigned seed : {1u, 2u, 3u, 4u, 5u}) {
    SCOPED_TRACE(seed);
    std::vector<TreeInputNode> in = RandomTree(400, seed);
    in[397].pinned = true;
    TreeLayoutOptions o;
    TreeLayout l = LayoutTree(in, o);
    ExpectSound(in, l, o);
    int pinned = 0;  // 397 and its ancestors: drawn whatever the limits
    for (int id = 397; id >= 0; id = in[id].parent) ++pinned;
    EXPECT_LE(static_cast<int>(l.nodes.size()), std::max(o.max_nodes, pinned));
    // Beyond the limit only by the pinned path's own "+N" marks, one a level.
    EXPECT_LE(l.columns, o.max_columns + pinned);
    EXPECT_GT(l.nodes.size(), 20u);
  }
}

TEST(TreeLayout, CyclesAndUnknownParentsBecomeRoots) {
  // 1 and 2 name each other; 3's parent is not in the input.
  std::vector<TreeInputNode> in = {N(0, -1, 1), N(1, 2, 1), N(2, 1, 1), N(3, 99, 1), N(4, 3, 1)};
  TreeLayoutOptions o;
  TreeLayout l = LayoutTree(in, o);
  ExpectSound(in, l, o);
  EXPECT_EQ(l.nodes.size(), 5u);
}

}  // namespace
}  // namespace kopt
