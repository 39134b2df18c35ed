// Placing a search tree on a page: a tidy top-down layout (each subtree owns
// a contiguous run of columns, a parent sits over its children) that keeps
// the most telling nodes when the tree is too large to draw whole, and
// counts the rest in one "+N more" mark under their parent.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kopt {

struct TreeInputNode {
  int id = 0;
  int parent = -1;  ///< -1 (or an id not in the input): a root
  /// How much it matters to show this node's subtree (larger first), e.g.
  /// the best speedup below it.
  double importance = 0;
  bool pinned = false;  ///< always drawn (the best node and its ancestors)
  std::string group;    ///< counted by group in a "+N more" mark (e.g. its verdict)
};

struct TreeLayoutOptions {
  int max_columns = 34;  ///< leaves and "+N more" marks side by side, at most
  int max_nodes = 160;   ///< nodes drawn, at most (pinned ones always are)
  double column_px = 30;
  double level_px = 62;
  double margin_px = 24;  ///< around the drawing
};

struct PlacedNode {
  int id = 0;
  int parent = -1;  ///< -1 for a root
  int depth = 0;
  double x = 0, y = 0;  ///< centre
};

/// The hidden children of one drawn node, with all their descendants.
struct MoreMark {
  int parent = 0;
  int hidden = 0;
  std::map<std::string, int> by_group;
  int depth = 0;  ///< the level the mark is drawn on (its parent's + 1)
  double x = 0, y = 0;
};

struct TreeLayout {
  std::vector<PlacedNode> nodes;  ///< in drawing order: parents before children
  std::vector<MoreMark> more;
  int columns = 0;
  int levels = 0;
  double width = 0, height = 0;
};

/// Lays out `nodes` (ids unique; order among siblings is ascending id).
/// Which nodes are drawn: the pinned ones, then, greedily, the child of a
/// drawn node with the largest importance (ties: shallower, then lower id)
/// while the columns and node count allow. Every node is either drawn or
/// counted in exactly one MoreMark; nodes at one depth never share a column.
TreeLayout LayoutTree(const std::vector<TreeInputNode>& nodes,
                      const TreeLayoutOptions& options = {});

}  // namespace kopt
