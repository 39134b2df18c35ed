#include "report/tree_layout.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

namespace kopt {
namespace {

struct Work {
  const std::vector<TreeInputNode>& in;
  std::vector<int> parent;                 // index, -1 for a root
  std::vector<std::vector<int>> children;  // indices, ascending id
  std::vector<int> depth;
  std::vector<int> size;     // subtree size
  std::vector<double> best;  // largest importance in the subtree
  std::vector<bool> pinned;  // pinned, or an ancestor of a pinned node
  std::vector<bool> shown;
  std::vector<int> shown_children;
  std::vector<int> hidden_children;
  int columns = 0;
  int shown_count = 0;
  std::vector<int> roots;

  explicit Work(const std::vector<TreeInputNode>& nodes) : in(nodes) {}
};

// The columns a drawn node adds: itself as a leaf, its "+N more" mark when
// it has children, less the column its parent stops taking as a leaf and
// the parent's mark when this was its last hidden child.
int ColumnsAdded(const Work& w, int i) {
  int delta = 1 + (w.children[i].empty() ? 0 : 1);
  const int p = w.parent[i];
  if (p >= 0) {
    if (w.shown_children[p] == 0) --delta;
    if (w.hidden_children[p] == 1) --delta;
  }
  return delta;
}

void Show(Work& w, int i) {
  w.columns += ColumnsAdded(w, i);
  w.shown[i] = true;
  ++w.shown_count;
  if (int p = w.parent[i]; p >= 0) {
    ++w.shown_children[p];
    --w.hidden_children[p];
  }
}

}  // namespace

TreeLayout LayoutTree(const std::vector<TreeInputNode>& nodes, const TreeLayoutOptions& opt) {
  TreeLayout out;
  const int n = static_cast<int>(nodes.size());
  if (n == 0) return out;
  Work w(nodes);
  std::unordered_map<int, int> index;
  for (int i = 0; i < n; ++i) index.emplace(nodes[i].id, i);
  w.parent.assign(n, -1);
  for (int i = 0; i < n; ++i) {
    auto it = index.find(nodes[i].parent);
    if (it != index.end() && it->second != i) w.parent[i] = it->second;
  }
  // A parent chain that loops is cut where it closes: that node is a root.
  {
    std::vector<int> walked_by(n, -1);  // the walk that reached a node first
    for (int i = 0; i < n; ++i) {
      for (int j = i; j >= 0 && walked_by[j] != i; j = w.parent[j]) {
        if (walked_by[j] >= 0) break;  // an earlier walk went on from here
        walked_by[j] = i;
        if (w.parent[j] >= 0 && walked_by[w.parent[j]] == i) w.parent[j] = -1;
      }
    }
  }
  w.children.assign(n, {});
  for (int i = 0; i < n; ++i)
    if (w.parent[i] >= 0)
      w.children[w.parent[i]].push_back(i);
    else
      w.roots.push_back(i);
  auto by_id = [&](int a, int b) { return nodes[a].id < nodes[b].id; };
  for (auto& c : w.children) std::sort(c.begin(), c.end(), by_id);
  std::sort(w.roots.begin(), w.roots.end(), by_id);

  // Depth-first order from the roots, so subtree sums run children first.
  std::vector<int> order;
  w.depth.assign(n, 0);
  {
    std::vector<int> stack(w.roots.rbegin(), w.roots.rend());
    while (!stack.empty()) {
      int i = stack.back();
      stack.pop_back();
      order.push_back(i);
      for (auto it = w.children[i].rbegin(); it != w.children[i].rend(); ++it) {
        w.depth[*it] = w.depth[i] + 1;
        stack.push_back(*it);
      }
    }
  }
  w.size.assign(n, 1);
  w.best.resize(n);
  w.pinned.assign(n, false);
  for (int i = 0; i < n; ++i) w.best[i] = nodes[i].importance;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int i = *it;
    if (nodes[i].pinned) w.pinned[i] = true;
    if (int p = w.parent[i]; p >= 0) {
      w.size[p] += w.size[i];
      w.best[p] = std::max(w.best[p], w.best[i]);
      if (w.pinned[i]) w.pinned[p] = true;
    }
  }

  // Which nodes are drawn.
  w.shown.assign(n, false);
  w.shown_children.assign(n, 0);
  w.hidden_children.assign(n, 0);
  for (int i = 0; i < n; ++i) w.hidden_children[i] = static_cast<int>(w.children[i].size());
  for (int i : order)  // parents before children
    if (w.parent[i] < 0 || w.pinned[i]) Show(w, i);
  auto later = [&](int a, int b) {  // priority_queue: true when a comes after b
    if (w.best[a] != w.best[b]) return w.best[a] < w.best[b];
    if (w.depth[a] != w.depth[b]) return w.depth[a] > w.depth[b];
    return nodes[a].id > nodes[b].id;
  };
  std::priority_queue<int, std::vector<int>, decltype(later)> frontier(later);
  for (int i = 0; i < n; ++i)
    if (w.shown[i])
      for (int c : w.children[i])
        if (!w.shown[c]) frontier.push(c);
  while (!frontier.empty()) {
    const int c = frontier.top();
    frontier.pop();
    if (w.shown_count >= opt.max_nodes || w.columns + ColumnsAdded(w, c) > opt.max_columns)
      continue;
    Show(w, c);
    for (int k : w.children[c]) frontier.push(k);
  }

  // Columns: leaves and marks left to right; a parent over the middle of
  // its first and last child.
  int next_column = 0, max_depth = 0;
  std::vector<double> column(n, 0);
  std::function<double(int)> place = [&](int i) -> double {
    max_depth = std::max(max_depth, w.depth[i]);
    std::vector<int> kids;
    for (int c : w.children[i])
      if (w.shown[c]) kids.push_back(c);
    const bool mark = w.hidden_children[i] > 0;
    if (kids.empty() && !mark) return column[i] = next_column++;
    double first = -1, last = -1;
    for (int c : kids) {
      double x = place(c);
      if (first < 0) first = x;
      last = x;
    }
    if (mark) {
      MoreMark m;
      m.parent = nodes[i].id;
      m.depth = w.depth[i] + 1;
      max_depth = std::max(max_depth, m.depth);
      m.x = next_column++;
      std::vector<int> stack;
      for (int c : w.children[i])
        if (!w.shown[c]) stack.push_back(c);
      while (!stack.empty()) {
        int j = stack.back();
        stack.pop_back();
        ++m.hidden;
        ++m.by_group[nodes[j].group];
        for (int k : w.children[j]) stack.push_back(k);
      }
      if (first < 0) first = m.x;
      last = m.x;
      out.more.push_back(std::move(m));
    }
    return column[i] = (first + last) / 2;
  };
  std::vector<int> drawn;  // parents before children
  for (int r : w.roots) place(r);
  for (int i : order)
    if (w.shown[i]) drawn.push_back(i);

  out.columns = next_column;
  out.levels = max_depth + 1;
  auto px = [&](double col) { return opt.margin_px + (col + 0.5) * opt.column_px; };
  auto py = [&](int depth) { return opt.margin_px + depth * opt.level_px; };
  for (int i : drawn) {
    PlacedNode p;
    p.id = nodes[i].id;
    p.parent = w.parent[i] >= 0 ? nodes[w.parent[i]].id : -1;
    p.depth = w.depth[i];
    p.x = px(column[i]);
    p.y = py(w.depth[i]);
    out.nodes.push_back(p);
  }
  for (auto& m : out.more) {
    m.x = px(m.x);
    m.y = py(m.depth);
  }
  out.width = 2 * opt.margin_px + out.columns * opt.column_px;
  out.height = 2 * opt.margin_px + max_depth * opt.level_px;
  return out;
}

}  // namespace kopt
