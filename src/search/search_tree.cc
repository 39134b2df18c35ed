#include "search/search_tree.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace kopt {

const char* NodeStateName(NodeState s) {
  switch (s) {
    case NodeState::kPending:
      return "pending";
    case NodeState::kMeasured:
      return "measured";
    case NodeState::kBuildFailed:
      return "build_failed";
    case NodeState::kIncorrect:
      return "incorrect";
    case NodeState::kCrashed:
      return "crashed";
    case NodeState::kTimedOut:
      return "timed_out";
  }
  return "unknown";
}

bool IsFailure(NodeState s) { return s != NodeState::kPending && s != NodeState::kMeasured; }

void SearchTree::Reset(double root_objective, const std::string& root_hash) {
  nodes_.clear();
  sources_.clear();
  moves_.clear();
  SearchNode root;
  root.id = 0;
  root.source_hash = root_hash;
  root.state = NodeState::kMeasured;
  root.objective = root_objective;
  nodes_.push_back(root);
  if (!root_hash.empty()) sources_.insert(root_hash);
}

int SearchTree::AddChild(int parent, const std::string& move, const std::string& source_hash) {
  if (parent < 0 || parent >= size()) {
    throw Error(
        fmt::format("search tree has no node {} to add a child to: pass an id that "
                    "NextBatch returned",
                    parent));
  }
  if (SeenMove(parent, move)) return -1;
  if (SeenSource(source_hash)) {
    moves_.insert({parent, move});  // tried: it leads to a known candidate
    return -1;
  }
  SearchNode child;
  child.id = size();
  child.parent = parent;
  child.depth = nodes_[parent].depth + 1;
  child.move = move;
  child.source_hash = source_hash;
  nodes_[parent].children.push_back(child.id);
  moves_.insert({parent, move});
  if (!source_hash.empty()) sources_.insert(source_hash);
  nodes_.push_back(std::move(child));
  return nodes_.back().id;
}

bool SearchTree::SeenSource(const std::string& source_hash) const {
  return !source_hash.empty() && sources_.count(source_hash) > 0;
}

bool SearchTree::SeenMove(int parent, const std::string& move) const {
  return moves_.count({parent, move}) > 0;
}

std::vector<int> SearchTree::PathTo(int id) const {
  std::vector<int> path;
  for (int v = id; v != -1; v = node(v).parent) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<int> SearchTree::Subtree(int id) const {
  std::vector<int> out;
  std::vector<int> stack = {id};
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    out.push_back(v);
    const auto& kids = node(v).children;
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  return out;
}

std::string SearchTree::Dump() const {
  if (nodes_.empty()) return "";
  std::string out;
  for (int id : Subtree(0)) {
    const SearchNode& n = nodes_[id];
    std::string objective =
        n.state == NodeState::kMeasured ? fmt::format("{:.6f}", n.objective) : "-";
    out +=
        fmt::format("{:{}}{} <- {} [{}] {} {} visits={}{}\n", "", 2 * n.depth, n.id, n.parent,
                    n.move, NodeStateName(n.state), objective, n.visits, n.closed ? " closed" : "");
  }
  return out;
}

}  // namespace kopt
