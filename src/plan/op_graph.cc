#include "plan/op_graph.h"

#include "core/error.h"

namespace kopt {

long long GraphValue::Numel() const {
  long long n = 1;
  for (long long d : shape) n *= d;
  return n;
}

std::string OpBase(const std::string& op) {
  std::string s = op;
  if (const auto p = s.find("::"); p != std::string::npos) s = s.substr(p + 2);
  if (const auto p = s.find('.'); p != std::string::npos) s = s.substr(0, p);
  // In-place variants end in one "_"; private ops start with one (_softmax).
  if (s.size() > 1 && s.back() == '_' && s[s.size() - 2] != '_') s.pop_back();
  return s;
}

const GraphNode* OpGraph::Producer(int id) const {
  const GraphValue& v = Value(id);
  if (v.source != "op" || v.node < 0 || v.node >= static_cast<int>(nodes.size())) return nullptr;
  return &nodes[static_cast<std::size_t>(v.node)];
}

std::vector<const GraphNode*> OpGraph::Consumers(int id) const {
  std::vector<const GraphNode*> out;
  for (const GraphNode& n : nodes)
    for (int i : n.in)
      if (i == id) {
        out.push_back(&n);
        break;
      }
  return out;
}

bool OpGraph::IsOutput(int id) const {
  for (int o : outputs)
    if (o == id) return true;
  return false;
}

const Json* OpGraph::Arg(const GraphNode& n, std::size_t i, const char* name) {
  if (name && n.kwargs.is_object() && n.kwargs.contains(name)) return &n.kwargs.at(name);
  if (n.args.is_array() && i < n.args.size()) return &n.args.at(i);
  return nullptr;
}

std::optional<std::pair<long long, long long>> PairArg(
    const GraphNode& n, std::size_t i, std::optional<std::pair<long long, long long>> fallback,
    const char* kw) {
  const Json* a = OpGraph::Arg(n, i, kw);
  if (!a || a->is_null() || (a->is_array() && a->empty())) return fallback;
  if (a->is_number_integer()) return std::make_pair(a->get<long long>(), a->get<long long>());
  if (a->is_array() && a->size() == 1 && a->at(0).is_number_integer())
    return std::make_pair(a->at(0).get<long long>(), a->at(0).get<long long>());
  if (a->is_array() && a->size() == 2 && a->at(0).is_number_integer() &&
      a->at(1).is_number_integer())
    return std::make_pair(a->at(0).get<long long>(), a->at(1).get<long long>());
  return std::nullopt;
}

bool BoolArg(const GraphNode& n, std::size_t i, const char* kw, bool fallback) {
  const Json* a = OpGraph::Arg(n, i, kw);
  return a && a->is_boolean() ? a->get<bool>() : fallback;
}

std::optional<OpGraph> OpGraphFromJson(const Json& graph) {
  if (!graph.is_object() || graph.value("version", 0) < 2) return std::nullopt;
  if (!graph.contains("nodes") || !graph.at("nodes").is_array() || graph.at("nodes").empty())
    return std::nullopt;
  OpGraph g;
  try {
    int id = 0;
    for (const Json& v : graph.at("values")) {
      GraphValue gv;
      gv.id = id++;
      gv.shape = v.at("shape").get<std::vector<long long>>();
      gv.dtype = v.value("dtype", "");
      const Json& s = v.at("source");
      gv.source = s.value("kind", "const");
      gv.abi_index = s.value("index", -1);
      gv.role = s.value("role", "");
      gv.name = s.value("name", "");
      gv.node = s.value("node", -1);
      gv.output = s.value("output", 0);
      g.values.push_back(std::move(gv));
    }
    int index = 0;
    for (const Json& n : graph.at("nodes")) {
      GraphNode gn;
      gn.index = index++;
      gn.op = n.at("op").get<std::string>();
      gn.base = OpBase(gn.op);
      std::string tail =
          gn.op.substr(gn.op.find("::") == std::string::npos ? 0 : gn.op.find("::") + 2);
      tail = tail.substr(0, tail.find('.'));
      gn.inplace = tail.size() > 1 && tail.back() == '_' && tail[tail.size() - 2] != '_';
      gn.args = n.value("args", Json::array());
      gn.kwargs = n.value("kwargs", Json::object());
      gn.in = n.at("in").get<std::vector<int>>();
      gn.out = n.at("out").get<std::vector<int>>();
      gn.flops = n.value("flops", 0.0);
      gn.matrix = n.value("class", "") == "matrix";
      for (int v : gn.in)
        if (v < 0 || v >= static_cast<int>(g.values.size()))
          throw Error("op graph node " + std::to_string(gn.index) + " reads value " +
                      std::to_string(v) +
                      ", which the graph does not list: capture the task again.");
      for (int v : gn.out)
        if (v < 0 || v >= static_cast<int>(g.values.size()))
          throw Error("op graph node " + std::to_string(gn.index) + " writes value " +
                      std::to_string(v) +
                      ", which the graph does not list: capture the task again.");
      g.nodes.push_back(std::move(gn));
    }
    g.outputs = graph.value("outputs", std::vector<int>{});
  } catch (const Json::exception& e) {
    throw Error(std::string("the captured op graph is malformed (") + e.what() +
                "): capture the task again.");
  }
  return g;
}

}  // namespace kopt
