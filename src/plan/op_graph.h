// The captured op graph as typed values: what the planner and the fusion
// generator read. Capture records it (python/kopt/capture.py, record_graph,
// version 2): every aten op the reference's forward ran, in order, with its
// arguments, and every tensor value with where it came from.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"

namespace kopt {

/// One tensor value of the forward.
struct GraphValue {
  int id = 0;
  std::vector<long long> shape;
  std::string dtype;  ///< "float32", "int64", ...
  /// "abi" (a forward input, parameter or buffer: `abi_index` says which),
  /// "op" (output `output` of node `node`) or "const" (made outside any op).
  std::string source = "const";
  int abi_index = -1;
  std::string role;  ///< abi only: input, param, buffer
  std::string name;  ///< abi params and buffers: the module's name for it
  int node = -1;
  int output = 0;
  long long Numel() const;
};

/// One aten op.
struct GraphNode {
  int index = 0;
  std::string op;    ///< "aten::gelu"
  std::string base;  ///< without namespace and trailing "_": "gelu"
  Json args = Json::array();
  Json kwargs = Json::object();
  std::vector<int> in;   ///< value ids of its tensor arguments, in order
  std::vector<int> out;  ///< value ids it produced
  double flops = 0;
  bool matrix = false;
  bool inplace = false;  ///< the op name ends in "_" (relu_)
};

struct OpGraph {
  std::vector<GraphValue> values;  ///< by id
  std::vector<GraphNode> nodes;    ///< in execution order
  std::vector<int> outputs;        ///< the values the forward returns, in order

  const GraphValue& Value(int id) const { return values.at(static_cast<std::size_t>(id)); }
  /// The node that produced `id`, or nullptr for an ABI input or a constant.
  const GraphNode* Producer(int id) const;
  /// The nodes that read `id`, in order.
  std::vector<const GraphNode*> Consumers(int id) const;
  bool IsOutput(int id) const;
  /// Positional argument `i` of a node (kwargs by `name` when given and
  /// present there); null when absent.
  static const Json* Arg(const GraphNode& n, std::size_t i, const char* name = nullptr);
};

/// A pair argument ([3, 3], [3] or 3) of a node, or `fallback` when absent,
/// None or empty; nullopt when it is something else.
std::optional<std::pair<long long, long long>> PairArg(
    const GraphNode& n, std::size_t i, std::optional<std::pair<long long, long long>> fallback,
    const char* kw = nullptr);
/// A boolean argument of a node, or `fallback` when absent or not a bool.
bool BoolArg(const GraphNode& n, std::size_t i, const char* kw, bool fallback);

/// The graph of a capture (TaskBundle::graph); nullopt when it was recorded
/// before dataflow was (version < 2) or has no nodes. Malformed entries
/// throw kopt::Error naming what is wrong.
std::optional<OpGraph> OpGraphFromJson(const Json& graph);

/// An op's base name: "aten::relu_" -> "relu", "aten::add.Tensor" -> "add".
std::string OpBase(const std::string& op);

}  // namespace kopt
