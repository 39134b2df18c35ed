#include "plan/hybrid.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kopt {
namespace {

bool PlainWord(const std::string& s) {
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':'))
      return false;
  return !s.empty();
}

/// A captured argument as a Python expression; false when it cannot be one.
bool Py(const Json& a, const OpGraph& g, std::string* out, std::string* why) {
  if (a.is_null()) {
    *out = "None";
  } else if (a.is_boolean()) {
    *out = a.get<bool>() ? "True" : "False";
  } else if (a.is_number_integer()) {
    *out = std::to_string(a.get<long long>());
  } else if (a.is_number()) {
    *out = fmt::format("{:.17g}", a.get<double>());
    if (out->find_first_of(".eEn") == std::string::npos) *out += ".0";
  } else if (a.is_string()) {
    const std::string s = a.get<std::string>();
    if (s == "inf" || s == "-inf" || s == "nan") {
      *out = "float('" + s + "')";
    } else if (s.rfind("torch.", 0) == 0 && PlainWord(s)) {
      *out = s;  // a dtype, layout or memory format
    } else if (PlainWord(s)) {
      *out = "'" + s + "'";
    } else {
      *why = "an argument string the replay cannot write: " + s;
      return false;
    }
  } else if (a.is_array()) {
    std::string s = "[";
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::string x;
      if (!Py(a[i], g, &x, why)) return false;
      s += (i ? ", " : "") + x;
    }
    *out = s + "]";
  } else if (a.is_object() && a.contains("v")) {
    const int id = a.at("v").get<int>();
    const GraphValue& v = g.Value(id);
    if (v.source == "const") {
      *why = fmt::format("value {} is a constant made outside any op", id);
      return false;
    }
    *out = fmt::format("v{}", id);
  } else {
    *why = "an argument the replay cannot write: " + a.dump();
    return false;
  }
  return true;
}

/// The sizes of a view of `x` (shape `in`) to shape `o`, written from x's
/// shape at run time: dims that `o` shares with `in`, aligned from the right
/// (trailing dims kept) or from the left (leading dims kept, flatten), are
/// read from x, size-1 dims stay 1 and one other dim is -1. With
/// `literals`, dims past that one keep their captured sizes; without,
/// nullopt when a second dim would need one.
std::optional<std::string> ViewDims(const std::string& x, const std::vector<long long>& in,
                                    const std::vector<long long>& o, bool literals) {
  std::optional<std::vector<std::string>> best;
  int best_literals = 0;
  for (bool from_right : {true, false}) {
    std::vector<std::string> dims(o.size());
    int unknown = 0, lits = 0;
    for (std::size_t k = 0; k < o.size(); ++k) {
      const std::size_t i = from_right ? o.size() - 1 - k : k;
      const long long j =
          from_right ? static_cast<long long>(in.size()) - static_cast<long long>(o.size() - i)
                     : static_cast<long long>(i);
      if (unknown == 0 && j >= 0 && j < static_cast<long long>(in.size()) &&
          in[static_cast<std::size_t>(j)] == o[i] && o[i] != 1) {
        dims[i] = fmt::format("{}.shape[{}]", x, j);
      } else if (o[i] == 1) {
        dims[i] = "1";
      } else if (unknown == 0) {
        dims[i] = "-1";
        unknown = 1;
      } else {
        dims[i] = std::to_string(o[i]);
        ++lits;
      }
    }
    if (lits > 0 && !literals) continue;
    if (!best || lits < best_literals) {
      best = dims;
      best_literals = lits;
    }
  }
  if (!best) return std::nullopt;
  return "[" + fmt::format("{}", fmt::join(*best, ", ")) + "]";
}

/// Arguments derived from the input's shape, written from the shape at run
/// time so the replay holds at any size (the verifier's second shape):
/// view/reshape and expand sizes, group norm's N, C and HxW, layer norm's
/// normalized_shape. Empty: none of those (write the captured values).
std::map<std::size_t, std::string> ShapeArgs(const GraphNode& n, const OpGraph& g) {
  std::map<std::size_t, std::string> out;
  if (n.in.empty()) return out;
  const std::string x = fmt::format("v{}", n.in[0]);
  const auto& in_shape = g.Value(n.in[0]).shape;
  if ((n.base == "view" || n.base == "_unsafe_view" || n.base == "_reshape_alias" ||
       n.base == "reshape") &&
      !n.out.empty()) {
    if (auto dims = ViewDims(x, in_shape, g.Value(n.out[0]).shape, false)) out[1] = *dims;
  } else if (n.base == "expand" && !n.out.empty()) {
    // -1 keeps a dim; only the broadcast ones keep their captured sizes.
    const auto& o = g.Value(n.out[0]).shape;
    std::vector<std::string> dims;
    for (std::size_t i = 0; i < o.size(); ++i) {
      const long long j =
          static_cast<long long>(in_shape.size()) - static_cast<long long>(o.size() - i);
      dims.push_back(
          j >= 0 && in_shape[static_cast<std::size_t>(j)] == o[i] ? "-1" : std::to_string(o[i]));
    }
    out[1] = "[" + fmt::format("{}", fmt::join(dims, ", ")) + "]";
  } else if (n.base == "native_group_norm" && in_shape.size() >= 2) {
    out[3] = x + ".shape[0]";
    out[4] = x + ".shape[1]";
    out[5] = fmt::format("{0}.numel() // max(1, {0}.shape[0] * {0}.shape[1])", x);
  } else if (n.base == "native_layer_norm") {
    const Json* ns = OpGraph::Arg(n, 1);
    if (ns && ns->is_array() && !ns->empty())
      out[1] = fmt::format("list({}.shape[-{}:])", x, ns->size());
  }
  return out;
}

}  // namespace

namespace {

bool IsConv2d(const GraphNode& n, const OpGraph& g) {
  static const std::set<std::string> kConv = {"convolution", "_convolution", "conv2d",
                                              "cudnn_convolution"};
  return kConv.count(n.base) && !n.in.empty() && g.Value(n.in[0]).shape.size() == 4;
}

/// A scalar argument as a number, or nullopt.
std::optional<double> Num(const GraphNode& n, std::size_t i, const char* kw = nullptr) {
  const Json* a = OpGraph::Arg(n, i, kw);
  if (!a || !a->is_number()) return std::nullopt;
  return a->get<double>();
}

/// An elementwise op that never decreases as its input grows, so it
/// commutes with a max: max(f(x)) == f(max(x)), NaN kept either way.
bool Nondecreasing(const GraphNode& n) {
  static const std::set<std::string> kAlways = {"relu", "relu6", "hardtanh",  "sigmoid",
                                                "tanh", "clamp", "clamp_min", "clamp_max"};
  if (n.in.size() != 1 || n.out.size() != 1) return false;  // clamp by tensors: no
  if (kAlways.count(n.base)) {
    if (n.base == "hardtanh" || n.base == "clamp") {
      auto lo = Num(n, 1, "min"), hi = Num(n, 2, "max");
      return !(lo && hi && *lo > *hi);
    }
    return true;
  }
  if (n.base == "leaky_relu") return Num(n, 1, "negative_slope").value_or(0.01) >= 0;
  if (n.base == "elu") {
    // scale * alpha * (exp(x * input_scale) - 1) below 0, scale * x above.
    const double alpha = Num(n, 1, "alpha").value_or(1), scale = Num(n, 2, "scale").value_or(1),
                 input_scale = Num(n, 3, "input_scale").value_or(1);
    return alpha >= 0 && scale >= 0 && input_scale >= 0;
  }
  return false;
}

/// Activation node -> the max pool that reads only its output, for each
/// pair that can swap: the activation then runs on the pool's (smaller)
/// output. The pool's indices must be unused (ties at ReLU's zero pick
/// other positions), and the activation's input read by nothing else (an
/// in-place activation changes it for every later reader).
std::map<std::size_t, std::size_t> PoolFirstPairs(const OpGraph& g) {
  static const std::set<std::string> kMaxPools = {"max_pool1d", "max_pool2d", "max_pool3d",
                                                  "max_pool2d_with_indices",
                                                  "max_pool3d_with_indices"};
  std::map<std::size_t, std::size_t> pairs;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& a = g.nodes[i];
    if (!Nondecreasing(a) || g.IsOutput(a.out[0])) continue;
    if (g.Consumers(a.in[0]).size() != 1 || g.IsOutput(a.in[0])) continue;
    const auto readers = g.Consumers(a.out[0]);
    if (readers.size() != 1 || !kMaxPools.count(readers[0]->base)) continue;
    const GraphNode& p = *readers[0];
    if (p.in.empty() || p.in[0] != a.out[0] || p.out.empty()) continue;
    bool indices_used = false;
    for (std::size_t j = 1; j < p.out.size(); ++j)
      indices_used = indices_used || g.IsOutput(p.out[j]) || !g.Consumers(p.out[j]).empty();
    if (indices_used) continue;
    pairs[i] = static_cast<std::size_t>(p.index);
  }
  return pairs;
}

/// Ops that only change how a value is laid out or viewed.
bool LayoutOnly(const GraphNode& n) {
  static const std::set<std::string> k = {"expand",     "clone",          "_unsafe_view",
                                          "view",       "_reshape_alias", "reshape",
                                          "contiguous", "alias",          "detach"};
  return k.count(n.base) && !n.in.empty() && n.out.size() == 1;
}

/// Back from `id` through layout-only ops (recorded in `nodes`) to the
/// value they start from.
int Through(const OpGraph& g, int id, std::set<std::size_t>* nodes) {
  while (const GraphNode* p = g.Producer(id)) {
    if (!LayoutOnly(*p)) break;
    nodes->insert(static_cast<std::size_t>(p->index));
    id = p->in[0];
  }
  return id;
}

/// The one reader of `id`, or nullptr.
const GraphNode* OnlyReader(const OpGraph& g, int id) {
  const auto r = g.Consumers(id);
  return r.size() == 1 && !g.IsOutput(id) ? r[0] : nullptr;
}

/// The pair of dims a transpose swaps, made non-negative for `rank`.
std::optional<std::pair<long long, long long>> Swapped(const GraphNode& n, std::size_t rank) {
  if (n.base != "transpose" || n.args.size() < 3 || !n.args[1].is_number_integer() ||
      !n.args[2].is_number_integer())
    return std::nullopt;
  long long a = n.args[1].get<long long>(), b = n.args[2].get<long long>();
  const long long r = static_cast<long long>(rank);
  if (a < 0) a += r;
  if (b < 0) b += r;
  return std::make_pair(std::min(a, b), std::max(a, b));
}

}  // namespace

namespace {

/// addmm(bias, x, w) with a 1-D bias, 2-D operands and beta = alpha = 1.
bool PlainAddmm(const OpGraph& g, const GraphNode& m) {
  if (m.base != "addmm" || m.in.size() != 3 || m.out.size() != 1) return false;
  if (g.Value(m.in[0]).shape.size() != 1 || g.Value(m.in[1]).shape.size() != 2 ||
      g.Value(m.in[2]).shape.size() != 2)
    return false;
  return Num(m, 3, "beta").value_or(1) == 1 && Num(m, 4, "alpha").value_or(1) == 1;
}

/// The activation a GEMM's output `y` reaches through layout ops with one
/// reader each, as its KOPT_EPILOGUE code (1 ReLU, 2 GELU, 3 GELU tanh), or
/// nullopt when the next op is something else.
std::optional<std::pair<const GraphNode*, int>> ActivationAfter(const OpGraph& g, int y) {
  const GraphNode* n = OnlyReader(g, y);
  while (n && LayoutOnly(*n) && n->base != "expand" && n->base != "clone") {
    y = n->out[0];
    n = OnlyReader(g, y);
  }
  if (!n || n->in.size() != 1 || n->out.size() != 1 || n->in[0] != y) return std::nullopt;
  if (n->base == "relu") return std::make_pair(n, 1);
  if (n->base != "gelu") return std::nullopt;
  const Json* a = OpGraph::Arg(*n, 1, "approximate");
  const std::string approx = a && a->is_string() ? a->get<std::string>() : "none";
  if (approx == "none") return std::make_pair(n, 2);
  if (approx == "tanh") return std::make_pair(n, 3);
  return std::nullopt;
}

}  // namespace

std::vector<LibraryEpilogue> LibraryEpilogues(const OpGraph& g) {
  std::vector<LibraryEpilogue> out;
  for (const GraphNode& m : g.nodes) {
    if (!PlainAddmm(g, m)) continue;
    // cuBLASLt's epilogues: ReLU and the tanh GELU (not erf's).
    const auto act = ActivationAfter(g, m.out[0]);
    if (!act || act->second == 2) continue;
    out.push_back({static_cast<std::size_t>(m.index), static_cast<std::size_t>(act->first->index),
                   act->second == 3});
  }
  return out;
}

std::vector<KernelGemm> KernelGemms(const OpGraph& g) {
  std::vector<KernelGemm> out;
  for (const GraphNode& m : g.nodes) {
    const bool addmm = PlainAddmm(g, m);
    const bool mm = m.base == "mm" && m.in.size() == 2 && m.out.size() == 1 &&
                    g.Value(m.in[0]).shape.size() == 2 && g.Value(m.in[1]).shape.size() == 2;
    if (!addmm && !mm) continue;
    bool fp32 = g.Value(m.out[0]).dtype == "float32";
    for (int v : m.in) fp32 = fp32 && g.Value(v).dtype == "float32";
    if (!fp32) continue;
    KernelGemm k;
    k.gemm = static_cast<std::size_t>(m.index);
    k.bias = addmm;
    if (const auto act = ActivationAfter(g, m.out[0])) {
      k.act = static_cast<std::size_t>(act->first->index);
      k.act_code = act->second;
    }
    out.push_back(k);
  }
  return out;
}

std::vector<KernelBatchNorm> KernelBatchNorms(const OpGraph& g) {
  static const std::set<std::string> kBn = {"native_batch_norm", "_native_batch_norm_legit",
                                            "cudnn_batch_norm"};
  std::vector<KernelBatchNorm> out;
  for (const GraphNode& n : g.nodes) {
    if (!kBn.count(n.base) || n.out.empty() || n.args.size() < 5) continue;
    // input, weight, bias, running_mean, running_var: a value or None each.
    std::vector<int> t;
    bool ok = true;
    for (std::size_t i = 0; i < 5; ++i) {
      const Json& a = n.args[i];
      if (a.is_null()) {
        t.push_back(-1);
      } else if (a.is_object() && a.contains("v")) {
        t.push_back(a.at("v").get<int>());
        ok = ok && g.Value(t.back()).dtype == "float32";
      } else {
        ok = false;
      }
    }
    const auto rank = t[0] < 0 ? 0 : g.Value(t[0]).shape.size();
    const auto momentum = Num(n, 6, "momentum");
    ok = ok && t[0] >= 0 && (rank == 2 || rank == 4) && (t[1] < 0) == (t[2] < 0) &&
         (t[3] < 0) == (t[4] < 0) && OpGraph::Arg(n, 5, "training") &&
         OpGraph::Arg(n, 5, "training")->is_boolean() &&
         OpGraph::Arg(n, 5, "training")->get<bool>() && momentum && *momentum >= 0 &&
         *momentum < 1 && Num(n, 7, "eps");
    for (std::size_t j = 1; j < n.out.size(); ++j)
      ok = ok && !g.IsOutput(n.out[j]) && g.Consumers(n.out[j]).empty();
    if (!ok) continue;
    KernelBatchNorm k;
    k.bn = static_cast<std::size_t>(n.index);
    k.rank = rank;
    int y = n.out[0];
    const auto& shape = g.Value(y).shape;
    if (const GraphNode* a = OnlyReader(g, y);
        a && a->base == "add" && a->in.size() == 2 && a->out.size() == 1 &&
        Num(*a, 2, "alpha").value_or(1) == 1 && (!a->inplace || a->in[0] == y)) {
      const int r = a->in[0] == y ? a->in[1] : a->in[0];
      const GraphNode* p = g.Producer(r);
      if (r != y && g.Value(r).shape == shape && g.Value(r).dtype == "float32" &&
          (!p || p->index < n.index)) {
        k.add = static_cast<std::size_t>(a->index);
        k.residual = r;
        y = a->out[0];
      }
    }
    if (const GraphNode* r = OnlyReader(g, y);
        r && r->base == "relu" && r->in.size() == 1 && r->out.size() == 1)
      k.act = static_cast<std::size_t>(r->index);
    out.push_back(k);
  }
  return out;
}

namespace {

/// Node indices in order again after nodes moved, and each output value's
/// producer with them.
void Renumber(OpGraph& g) {
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    GraphNode& n = g.nodes[k];
    n.index = static_cast<int>(k);
    for (std::size_t j = 0; j < n.out.size(); ++j) {
      GraphValue& v = g.values.at(static_cast<std::size_t>(n.out[j]));
      v.node = static_cast<int>(k);
      v.output = static_cast<int>(j);
    }
  }
}

}  // namespace

std::optional<MovedConvBiases> ConvBiasesIntoTail(const OpGraph& g, std::size_t tail_from) {
  MovedConvBiases m;
  m.graph = g;
  m.graph.nodes.clear();
  std::vector<GraphNode> adds;
  auto fresh = [&](const std::vector<long long>& shape, const std::string& dtype) {
    GraphValue v;
    v.id = static_cast<int>(m.graph.values.size());
    v.shape = shape;
    v.dtype = dtype;
    v.source = "op";
    m.graph.values.push_back(v);
    return v.id;
  };
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (i == tail_from) {
      m.tail_from = m.graph.nodes.size();
      for (GraphNode& a : adds) m.graph.nodes.push_back(std::move(a));
      adds.clear();
    }
    const GraphNode& n = g.nodes[i];
    const Json* bias = OpGraph::Arg(n, 2);
    // A returned output qualifies too: the add that remakes it (same value
    // id) is then the tail's, and the tail writes it.
    bool ok = i < tail_from && IsConv2d(n, g) && n.in.size() == 3 && n.out.size() == 1 && bias &&
              bias->is_object() && bias->value("v", -1) == n.in[2];
    if (ok) {
      const GraphValue& b = g.Value(n.in[2]);
      const GraphValue& y = g.Value(n.out[0]);
      ok = b.source == "abi" && b.shape.size() == 1 && y.shape.size() == 4 &&
           y.shape[1] == b.shape[0] && b.dtype == y.dtype;
      for (const GraphNode* c : g.Consumers(n.out[0]))
        ok = ok && static_cast<std::size_t>(c->index) >= tail_from;
    }
    if (!ok) {
      m.graph.nodes.push_back(n);
      continue;
    }
    const GraphValue& b = g.Value(n.in[2]);
    const GraphValue& y = g.Value(n.out[0]);
    GraphNode view;
    view.op = "aten::view";
    view.base = "view";
    view.args = Json::array({Json{{"v", b.id}}, Json::array({b.shape[0], 1, 1})});
    view.in = {b.id};
    view.out = {fresh({b.shape[0], 1, 1}, b.dtype)};
    GraphNode conv = n;
    conv.args[2] = nullptr;
    conv.in = {n.in[0], n.in[1]};
    conv.out = {fresh(y.shape, y.dtype)};
    GraphNode add;
    add.op = "aten::add";
    add.base = "add";
    add.args = Json::array({Json{{"v", conv.out[0]}}, Json{{"v", view.out[0]}}});
    add.in = {conv.out[0], view.out[0]};
    add.out = {y.id};
    m.graph.nodes.push_back(std::move(view));
    m.graph.nodes.push_back(std::move(conv));
    adds.push_back(std::move(add));
    ++m.moved;
  }
  if (tail_from >= g.nodes.size()) {  // no tail yet: the adds make one at the end
    m.tail_from = m.graph.nodes.size();
    for (GraphNode& a : adds) m.graph.nodes.push_back(std::move(a));
    adds.clear();
  }
  if (m.moved == 0 || !adds.empty()) return std::nullopt;
  Renumber(m.graph);
  return m;
}

std::optional<FoldedGroupNorms> GroupNormsIntoTail(const OpGraph& g, std::size_t tail_from) {
  FoldedGroupNorms m;
  m.graph = g;
  m.graph.nodes.clear();
  std::vector<GraphNode> norms;  // the x * A + B pairs, placed before the tail
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (i == tail_from) {
      m.tail_from = m.graph.nodes.size();
      for (GraphNode& a : norms) m.graph.nodes.push_back(std::move(a));
      norms.clear();
    }
    const GraphNode& n = g.nodes[i];
    bool ok = i < tail_from && n.base == "native_group_norm" && !n.inplace && n.in.size() >= 1 &&
              n.out.size() == 3 && n.args.size() >= 8 && !g.IsOutput(n.out[0]);
    const GraphValue* x = ok ? &g.Value(n.in[0]) : nullptr;
    int w = -1, b = -1;
    auto groups = ok ? Num(n, 6, "group") : std::nullopt;
    auto eps = ok ? Num(n, 7, "eps") : std::nullopt;
    if (ok) {
      ok = x->shape.size() >= 3 && x->dtype == "float32" && g.Value(n.out[0]).shape == x->shape &&
           groups && *groups >= 1 && x->shape[1] % static_cast<long long>(*groups) == 0 && eps &&
           *eps >= 0;
      // Weight and bias: a [C] tensor each, or none.
      for (auto [at, id] : {std::pair{std::size_t{1}, &w}, std::pair{std::size_t{2}, &b}}) {
        const Json& a = n.args[at];
        if (a.is_object() && a.contains("v")) {
          *id = a.at("v").get<int>();
          const GraphValue& p = g.Value(*id);
          ok = ok && p.dtype == "float32" && p.shape == std::vector<long long>{x->shape[1]};
        } else {
          ok = ok && a.is_null();
        }
      }
      for (std::size_t j = 1; j < n.out.size(); ++j)
        ok = ok && !g.IsOutput(n.out[j]) && g.Consumers(n.out[j]).empty();
      for (const GraphNode* c : g.Consumers(n.out[0]))
        ok = ok && static_cast<std::size_t>(c->index) >= tail_from;
    }
    if (!ok) {
      m.graph.nodes.push_back(n);
      continue;
    }
    std::vector<long long> per(x->shape.size(), 1);
    per[0] = x->shape[0];
    per[1] = x->shape[1];
    auto fresh = [&](const std::vector<long long>& shape) {
      GraphValue v;
      v.id = static_cast<int>(m.graph.values.size());
      v.shape = shape;
      v.dtype = "float32";
      v.source = "op";
      m.graph.values.push_back(v);
      return v.id;
    };
    GraphNode stats;
    stats.op = "kopt::group_norm_affine";
    stats.base = "kopt_group_norm_affine";
    stats.args = Json::array({Json{{"v", n.in[0]}}, w >= 0 ? Json{{"v", w}} : Json(nullptr),
                              b >= 0 ? Json{{"v", b}} : Json(nullptr), *groups, *eps});
    stats.in = {n.in[0]};
    for (int p : {w, b})
      if (p >= 0) stats.in.push_back(p);
    const int scale = fresh(per), shift = fresh(per);
    stats.out = {scale, shift};
    GraphNode mul;
    mul.op = "aten::mul";
    mul.base = "mul";
    mul.args = Json::array({Json{{"v", n.in[0]}}, Json{{"v", scale}}});
    mul.in = {n.in[0], scale};
    mul.out = {fresh(x->shape)};
    GraphNode add;
    add.op = "aten::add";
    add.base = "add";
    add.args = Json::array({Json{{"v", mul.out[0]}}, Json{{"v", shift}}});
    add.in = {mul.out[0], shift};
    add.out = {n.out[0]};
    m.graph.nodes.push_back(std::move(stats));
    norms.push_back(std::move(mul));
    norms.push_back(std::move(add));
    ++m.folded;
  }
  if (m.folded == 0 || !norms.empty()) return std::nullopt;
  Renumber(m.graph);
  return m;
}

std::vector<KernelPool> KernelPools(const OpGraph& g) {
  std::vector<KernelPool> out;
  for (const GraphNode& p : g.nodes) {
    if ((p.base != "max_pool2d" && p.base != "max_pool2d_with_indices") || p.in.size() != 1 ||
        p.out.empty())
      continue;
    const GraphValue& x = g.Value(p.in[0]);
    if (x.shape.size() != 4 || x.dtype != "float32") continue;
    bool indices_read = false;
    for (std::size_t j = 1; j < p.out.size(); ++j)
      indices_read = indices_read || g.IsOutput(p.out[j]) || !g.Consumers(p.out[j]).empty();
    if (indices_read) continue;
    const auto k = PairArg(p, 1, std::nullopt, "kernel_size");
    if (!k) continue;
    const auto s = PairArg(p, 2, k, "stride"), pad = PairArg(p, 3, std::pair{0LL, 0LL}, "padding"),
               dil = PairArg(p, 4, std::pair{1LL, 1LL}, "dilation");
    const Json* ceil = OpGraph::Arg(p, 5, "ceil_mode");
    if (!s || !pad || !dil || dil->first != 1 || dil->second != 1) continue;
    if (ceil && !ceil->is_null() && !ceil->is_boolean()) continue;
    KernelPool kp;
    kp.pool = static_cast<std::size_t>(p.index);
    kp.kh = static_cast<int>(k->first), kp.kw = static_cast<int>(k->second);
    kp.sh = static_cast<int>(s->first), kp.sw = static_cast<int>(s->second);
    kp.ph = static_cast<int>(pad->first), kp.pw = static_cast<int>(pad->second);
    kp.ceil_mode = BoolArg(p, 5, "ceil_mode", false);
    if (kp.kh < 1 || kp.kw < 1 || kp.sh < 1 || kp.sw < 1 || kp.ph < 0 || kp.pw < 0 ||
        2 * kp.ph > kp.kh || 2 * kp.pw > kp.kw)
      continue;
    kp.input = p.in[0];
    // The activation before it, read by the pool alone.
    if (const GraphNode* a = g.Producer(kp.input); a && a->in.size() == 1 && a->out.size() == 1 &&
                                                   OnlyReader(g, kp.input) == &p &&
                                                   OnlyReader(g, a->in[0]) == a) {
      int code = 0;
      if (a->base == "relu") code = 1;
      if (a->base == "relu6") code = 2;
      if (a->base == "hardtanh" && Num(*a, 1, "min_val").value_or(-1) == 0 &&
          Num(*a, 2, "max_val").value_or(1) == 6)
        code = 2;
      if (code) {
        kp.act = static_cast<std::size_t>(a->index);
        kp.act_code = code;
        kp.input = a->in[0];
      }
    }
    // The convolution whose output that is, with a bias, read by it alone.
    const GraphNode* first = kp.act ? &g.nodes[*kp.act] : &p;
    if (const GraphNode* c = g.Producer(kp.input);
        c && IsConv2d(*c, g) && c->out.size() == 1 && OnlyReader(g, kp.input) == first) {
      const Json* b = OpGraph::Arg(*c, 2, "bias");
      const Json* transposed = OpGraph::Arg(*c, 6, "transposed");
      const bool plain = c->base == "convolution" || c->base == "_convolution";
      if (plain && b && b->is_object() && b->contains("v") && transposed &&
          transposed->is_boolean() && !transposed->get<bool>()) {
        const int bias = b->at("v").get<int>();
        const GraphValue& bv = g.Value(bias);
        if (bv.dtype == "float32" && bv.shape.size() == 1 && bv.shape[0] == x.shape[1]) {
          kp.conv = static_cast<std::size_t>(c->index);
          kp.bias = bias;
        }
      }
    }
    out.push_back(kp);
  }
  return out;
}

std::vector<AttentionRegion> AttentionRegions(const OpGraph& g) {
  std::vector<AttentionRegion> out;
  for (const GraphNode& sm : g.nodes) {
    if ((sm.base != "_softmax" && sm.base != "softmax") || sm.in.size() != 1) continue;
    const auto& sshape = g.Value(sm.in[0]).shape;
    const std::size_t rank = sshape.size();
    const Json* dim = OpGraph::Arg(sm, 1, "dim");
    if (rank < 3 || !dim || !dim->is_number_integer() ||
        (dim->get<long long>() != -1 && dim->get<long long>() != static_cast<long long>(rank) - 1))
      continue;
    AttentionRegion r;
    r.nodes.insert(static_cast<std::size_t>(sm.index));
    int x = sm.in[0];
    // An upper-triangular mask of ones above the diagonal, filled with -inf.
    const GraphNode* p = g.Producer(x);
    if (p && p->base == "masked_fill" && p->in.size() == 2) {
      const Json* fill = OpGraph::Arg(*p, 2, "value");
      const bool minus_inf =
          fill &&
          ((fill->is_string() && fill->get<std::string>() == "-inf") ||
           (fill->is_number() && std::isinf(fill->get<double>()) && fill->get<double>() < 0));
      const GraphNode* tri = g.Producer(Through(g, p->in[1], &r.nodes));
      if (!minus_inf || !tri || tri->base != "triu" || tri->in.size() != 1) continue;
      const Json* diag = OpGraph::Arg(*tri, 1, "diagonal");
      if (!diag || !diag->is_number_integer() || diag->get<long long>() != 1) continue;
      const GraphNode* ones = g.Producer(Through(g, tri->in[0], &r.nodes));
      if (!ones || ones->base != "ones") continue;
      const auto& m = g.Value(tri->out[0]).shape;
      if (m.size() != 2 || m[0] != sshape[rank - 2] || m[1] != sshape[rank - 1] || m[0] != m[1])
        continue;
      r.nodes.insert({static_cast<std::size_t>(p->index), static_cast<std::size_t>(tri->index),
                      static_cast<std::size_t>(ones->index)});
      r.causal = true;
      x = p->in[0];
      p = g.Producer(x);
    }
    // A constant scale.
    r.scale = 1.0;
    if (p && (p->base == "mul" || p->base == "div") && p->in.size() == 1 && p->args.size() > 1 &&
        p->args[1].is_number() && p->args[1].get<double>() != 0) {
      r.scale = p->base == "mul" ? p->args[1].get<double>() : 1.0 / p->args[1].get<double>();
      r.nodes.insert(static_cast<std::size_t>(p->index));
      x = p->in[0];
    }
    // Q K^T as a batched matrix product.
    const GraphNode* mm1 = g.Producer(Through(g, x, &r.nodes));
    if (!mm1 || (mm1->base != "bmm" && mm1->base != "matmul") || mm1->in.size() != 2) continue;
    r.nodes.insert(static_cast<std::size_t>(mm1->index));
    r.q = Through(g, mm1->in[0], &r.nodes);
    const GraphNode* kt = g.Producer(Through(g, mm1->in[1], &r.nodes));
    if (!kt) continue;
    const std::size_t krank = g.Value(kt->out[0]).shape.size();
    const auto sw = Swapped(*kt, krank);
    if (!sw || krank < 3 || sw->first != static_cast<long long>(krank) - 2 ||
        sw->second != static_cast<long long>(krank) - 1)
      continue;
    r.nodes.insert(static_cast<std::size_t>(kt->index));
    r.k = kt->in[0];
    // softmax -> (layout) -> P V.
    int y = sm.out[0];
    const GraphNode* c = OnlyReader(g, y);
    while (c && LayoutOnly(*c)) {
      r.nodes.insert(static_cast<std::size_t>(c->index));
      y = c->out[0];
      c = OnlyReader(g, y);
    }
    if (!c || (c->base != "bmm" && c->base != "matmul") || c->in.size() != 2 || c->in[0] != y)
      continue;
    r.nodes.insert(static_cast<std::size_t>(c->index));
    r.v = Through(g, c->in[1], &r.nodes);
    const auto& Q = g.Value(r.q).shape;
    const auto& K = g.Value(r.k).shape;
    const auto& V = g.Value(r.v).shape;
    if (Q.size() < 3 || K.size() != Q.size() || V.size() != Q.size()) continue;
    std::vector<long long> want(Q.begin(), Q.end() - 1);
    want.push_back(V.back());
    bool lead = true;
    for (std::size_t i = 0; i + 2 < Q.size(); ++i) lead = lead && Q[i] == K[i] && K[i] == V[i];
    if (!lead || Q.back() != K.back() || K[K.size() - 2] != V[V.size() - 2]) continue;
    // The product's layout ops up to the value of the attention's shape.
    y = c->out[0];
    while (g.Value(y).shape != want) {
      const GraphNode* n = OnlyReader(g, y);
      if (!n || !LayoutOnly(*n) || n->base == "expand") break;
      r.nodes.insert(static_cast<std::size_t>(n->index));
      y = n->out[0];
    }
    if (g.Value(y).shape != want) continue;
    r.out = y;
    r.last = static_cast<std::size_t>(g.Producer(y)->index);
    // Nothing outside the region reads what it makes, but its result.
    bool closed = true;
    for (std::size_t i : r.nodes) {
      if (i > r.last) closed = false;
      for (int o : g.nodes[i].out) {
        if (o == r.out) continue;
        if (g.IsOutput(o)) closed = false;
        for (const GraphNode* u : g.Consumers(o))
          closed = closed && r.nodes.count(static_cast<std::size_t>(u->index));
      }
    }
    // Q, K and V come from outside it.
    for (int v : {r.q, r.k, r.v})
      if (const GraphNode* n = g.Producer(v);
          n && r.nodes.count(static_cast<std::size_t>(n->index)))
        closed = false;
    if (closed) out.push_back(std::move(r));
  }
  return out;
}

namespace {

/// "relu_" -> "relu", "clamp_.Tensor" -> "clamp.Tensor": the op's
/// out-of-place form.
std::string OutOfPlace(const std::string& name) {
  const std::size_t dot = name.find('.');
  std::string base = name.substr(0, dot), rest = dot == std::string::npos ? "" : name.substr(dot);
  if (base.size() > 1 && base.back() == '_' && base[base.size() - 2] != '_') base.pop_back();
  return base + rest;
}

/// Emits the replay of captured nodes as Python lines of a forward whose
/// parameters are in `_p`, buffers in `_b` and inputs in `args`.
class Replay {
 public:
  /// Nodes from `tail_from` on may run inside a fused tail kernel: no
  /// activation there goes into a GEMM's epilogue (the tail would apply it
  /// a second time).
  Replay(const OpGraph& g, const ReplayOptions& o, std::size_t tail_from) : g_(g), o_(o) {
    if (o_.sdpa)
      for (AttentionRegion& a : AttentionRegions(g_)) {
        for (std::size_t i : a.nodes) {
          in_attention_.insert(i);
          for (int v : g_.nodes[i].out)
            if (v != a.out) hidden_.insert(v);
        }
        attention_at_[a.last] = std::move(a);
      }
    if (o_.lt_epilogue)
      for (const LibraryEpilogue& e : LibraryEpilogues(g_)) {
        if (e.act >= tail_from) continue;
        epilogue_at_gemm_[e.gemm] = e;
        epilogue_at_act_[e.act] = e;
      }
    if (!o_.gemm_source.empty())
      for (KernelGemm k : KernelGemms(g_)) {
        if (k.act && *k.act >= tail_from) k.act.reset(), k.act_code = 0;
        kgemm_at_[k.gemm] = k;
        if (k.act) kgemm_act_.insert(*k.act);
      }
    if (!o_.bn_source.empty())
      for (KernelBatchNorm k : KernelBatchNorms(g_)) {
        // An op inside the fused tail stays the tail's (it would be
        // applied twice).
        if (k.add && *k.add >= tail_from) k.add.reset(), k.residual = -1, k.act.reset();
        if (k.act && *k.act >= tail_from) k.act.reset();
        int y = g_.nodes[k.bn].out[0];
        if (k.add) {
          kbn_fused_[*k.add] = y;
          y = g_.nodes[*k.add].out[0];
        }
        if (k.act) {
          kbn_fused_[*k.act] = y;
          y = g_.nodes[*k.act].out[0];
        }
        kbn_at_[k.bn] = k;
        kbn_result_[k.bn] = y;
      }
    if (!o_.pool_source.empty() && o_.channels_last)
      for (KernelPool k : KernelPools(g_)) {
        // Nothing of it inside the fused tail (it would be applied twice).
        if (k.pool >= tail_from) continue;
        // An activation another kernel applies (a BatchNorm's ReLU) stays
        // there: the pool takes the activated value as it is.
        if (k.act && (*k.act >= tail_from || epilogue_at_act_.count(*k.act) ||
                      kgemm_act_.count(*k.act) || kbn_fused_.count(*k.act))) {
          k.act.reset();
          k.act_code = 0;
          k.conv.reset();
          k.bias = -1;
          k.input = g_.nodes[k.pool].in[0];
        }
        if (k.conv && *k.conv >= tail_from) k.conv.reset(), k.bias = -1;
        kpool_at_[k.pool] = k;
        if (k.act) kpool_act_.insert(*k.act);
        if (k.conv) kpool_conv_[*k.conv] = k.pool;
        // The indices exist on PyTorch's branch only.
        for (std::size_t j = 1; j < g_.nodes[k.pool].out.size(); ++j)
          hidden_.insert(g_.nodes[k.pool].out[j]);
      }
    if (o_.pool_first)
      for (const auto& [act, pool] : PoolFirstPairs(g_)) {
        // Already in a GEMM's epilogue or applied by a BatchNorm kernel.
        if (epilogue_at_act_.count(act) || kgemm_act_.count(act) || kbn_fused_.count(act)) continue;
        act_before_pool_[act] = pool;
        act_after_pool_[pool] = act;
      }
    if (!o_.channels_last) return;
    for (const GraphNode& n : g_.nodes)
      if (IsConv2d(n, g_)) conv_input_.insert(n.in[0]);
  }

  /// How many activation-pool pairs the replay can swap (knob POOL_FIRST).
  std::size_t PoolFirstCount() const { return act_before_pool_.size(); }
  /// How many GEMM + activation pairs fuse in cuBLASLt (knob LT_EPILOGUE).
  std::size_t EpilogueCount() const { return epilogue_at_gemm_.size(); }
  /// How many attention regions become one fused call (knob SDPA).
  std::size_t AttentionCount() const { return attention_at_.size(); }
  /// How many GEMMs run as kopt's kernel (knob GEMM_3XTF32).
  std::size_t KernelGemmCount() const { return kgemm_at_.size(); }
  /// How many BatchNorms run as kopt's kernel (knob BN_KERNEL), and how
  /// many residual adds and ReLUs they apply.
  std::size_t KernelBnCount() const { return kbn_at_.size(); }
  std::size_t KernelBnFusedCount() const { return kbn_fused_.size(); }
  /// How many max pools run as kopt's NHWC kernel (knob POOL_KERNEL), and
  /// how many convolution biases and activations they apply.
  std::size_t KernelPoolCount() const { return kpool_at_.size(); }
  std::size_t KernelPoolBiasCount() const { return kpool_conv_.size(); }
  std::size_t KernelPoolActCount() const { return kpool_act_.size(); }
  /// How many group norms run as their statistics, their normalization
  /// folded into the tail (GroupNormsIntoTail).
  int GroupNormAffineCount() const { return gn_affine_; }

  std::string indent = "        ";
  std::string body;

  /// Binds an ABI value to a local (an op's output is bound by its node);
  /// false for a constant made outside any op.
  bool Bind(int id) {
    if (bound_.count(id)) return true;
    const GraphValue& v = g_.Value(id);
    if (v.source != "abi") return v.source == "op";
    std::string src;
    if (v.role == "param")
      src = fmt::format("_p[{}]", Json(v.name).dump());
    else if (v.role == "buffer")
      src = fmt::format("_b[{}]", Json(v.name).dump());
    else
      src = fmt::format("args[{}]", v.abi_index);
    // An input a convolution reads goes to NHWC once, so every later op
    // (a residual add) reads the same layout.
    if (v.role == "input" && conv_input_.count(id)) src = "_kopt_cl(" + src + ")";
    body += indent + fmt::format("v{} = {}\n", id, src);
    bound_.insert(id);
    return true;
  }

  bool Node(const GraphNode& n, std::string* why) {
    const std::size_t i = static_cast<std::size_t>(n.index);
    if (in_attention_.count(i)) {
      // The region's ops wait for its last one: then the fused call, or
      // the ops as captured (knob SDPA).
      auto at = attention_at_.find(i);
      if (at == attention_at_.end()) return true;
      const AttentionRegion& a = at->second;
      for (int v : {a.q, a.k, a.v})
        if (!Bind(v)) {
          *why = "the attention reads a constant made outside any op";
          return false;
        }
      body += indent + "if SDPA:\n";
      body += indent + fmt::format("    v{} = _kopt_sdpa(v{}, v{}, v{}, {}, {:.17g})\n", a.out, a.q,
                                   a.k, a.v, a.causal ? "True" : "False", a.scale);
      body += indent + "else:\n";
      indent += "    ";
      for (std::size_t j : a.nodes)  // std::set: in graph order
        if (!Call(g_.nodes[j], "", why)) return false;
      indent.resize(indent.size() - 4);
      return true;
    }
    if (auto it = kpool_at_.find(i); it != kpool_at_.end()) {
      // kopt's NHWC max pool with the convolution's bias and the activation
      // after the max, or the pool as the other rewrites have it.
      const KernelPool& k = it->second;
      if (k.bias >= 0 && !Bind(k.bias)) {
        *why = "a pooled convolution's bias is a constant made outside any op";
        return false;
      }
      if (!Bind(k.input)) {
        *why = "a max pool reads a constant made outside any op";
        return false;
      }
      const std::string line =
          fmt::format("v{} = _kopt_pool(v{}, {}, ({}, {}), ({}, {}), ({}, {}), {}, {})", n.out[0],
                      k.input, k.bias >= 0 ? fmt::format("v{}", k.bias) : "None", k.kh, k.kw, k.sh,
                      k.sw, k.ph, k.pw, k.ceil_mode ? "True" : "False", k.act_code);
      return Branch(n, "POOL_KERNEL", line, why);
    }
    if (kpool_act_.count(i))  // applied by the pool kernel after the max
      return Branch(n, "POOL_KERNEL", fmt::format("v{} = v{}", n.out[0], n.in[0]), why);
    if (auto it = kpool_conv_.find(i); it != kpool_conv_.end()) {
      // The convolution without its bias (the pool kernel adds it), or as
      // the other rewrites have it.
      for (int v : n.in)
        if (!Bind(v)) {
          *why = fmt::format("{} reads a constant made outside any op", n.op);
          return false;
        }
      GraphNode nobias = n;
      nobias.args[2] = nullptr;
      body += indent + "if POOL_KERNEL:\n";
      indent += "    ";
      bool ok = Call(nobias, "", why);
      indent.resize(indent.size() - 4);
      body += indent + "else:\n";
      indent += "    ";
      ok = ok && Rest(n, why);
      indent.resize(indent.size() - 4);
      return ok;
    }
    if (auto it = kbn_at_.find(i); it != kbn_at_.end()) {
      // kopt's BatchNorm kernel with the residual and ReLU after it, or the
      // BatchNorm as the other rewrites have it.
      const KernelBatchNorm& k = it->second;
      std::vector<std::string> a;
      for (std::size_t j = 0; j < 5; ++j) {
        std::string x;
        if (!Py(n.args[j], g_, &x, why)) return false;
        a.push_back(x);
      }
      if (k.residual >= 0 && !Bind(k.residual)) {
        *why = "a BatchNorm's residual is a constant made outside any op";
        return false;
      }
      // When the forward returns what the pass hands on, the apply writes
      // it in NCHW order itself, so no conversion runs at the return.
      const int last = kbn_result_.at(i);
      const bool nchw = o_.channels_last &&
                        std::find(g_.outputs.begin(), g_.outputs.end(), last) != g_.outputs.end();
      const std::string line = fmt::format(
          "v{} = _kopt_bn({}, {:.17g}, {:.17g}, {}, {}{})", n.out[0], fmt::join(a, ", "),
          Num(n, 6, "momentum").value_or(0.1), Num(n, 7, "eps").value_or(1e-5), k.act ? 1 : 0,
          k.residual >= 0 ? fmt::format("v{}", k.residual) : "None", nchw ? ", nchw=1" : "");
      return Branch(n, "BN_KERNEL", line, why);
    }
    if (auto it = kbn_fused_.find(i); it != kbn_fused_.end())  // applied by the BatchNorm kernel
      return Branch(n, "BN_KERNEL", fmt::format("v{} = v{}", n.out[0], it->second), why);
    if (auto it = kgemm_at_.find(i); it != kgemm_at_.end()) {
      // kopt's GEMM kernel with the bias and activation, or the GEMM as the
      // other rewrites have it.
      const KernelGemm& k = it->second;
      const std::string line = k.bias ? fmt::format("v{} = _kopt_gemm(v{}, v{}, v{}, {})", n.out[0],
                                                    n.in[1], n.in[2], n.in[0], k.act_code)
                                      : fmt::format("v{} = _kopt_gemm(v{}, v{}, None, {})",
                                                    n.out[0], n.in[0], n.in[1], k.act_code);
      return Branch(n, "GEMM_3XTF32", line, why);
    }
    if (kgemm_act_.count(i))  // applied by the GEMM kernel as it stored
      return Branch(n, "GEMM_3XTF32", fmt::format("v{} = v{}", n.out[0], n.in[0]), why);
    if (const auto it = epilogue_at_act_.find(i);
        it != epilogue_at_act_.end() && kgemm_at_.count(it->second.gemm)) {
      // A cuBLASLt pair whose GEMM runs as kopt's kernel without this
      // activation: the activation runs as captured.
      body += indent + "if GEMM_3XTF32:\n";
      indent += "    ";
      bool ok = Call(n, "", why);
      indent.resize(indent.size() - 4);
      body += indent + "else:\n";
      indent += "    ";
      ok = ok && Rest(n, why);
      indent.resize(indent.size() - 4);
      return ok;
    }
    return Rest(n, why);
  }

  /// The node as the rewrites other than GEMM_3XTF32 have it.
  bool Rest(const GraphNode& n, std::string* why) {
    const std::size_t i = static_cast<std::size_t>(n.index);
    if (auto it = epilogue_at_gemm_.find(i); it != epilogue_at_gemm_.end())
      // The GEMM with its bias and activation in one cuBLASLt call; the
      // views after it carry the activated values.
      return KnobOrCall(
          n, "LT_EPILOGUE",
          fmt::format("v{} = torch.ops.aten._addmm_activation(v{}, v{}, v{}, "
                      "use_gelu={})",
                      n.out[0], n.in[0], n.in[1], n.in[2], it->second.gelu ? "True" : "False"),
          why);
    if (epilogue_at_act_.count(i))
      return KnobOrCall(n, "LT_EPILOGUE", fmt::format("v{} = v{}", n.out[0], n.in[0]), why);
    if (act_before_pool_.count(i))
      // The activation waits for the pool (POOL_FIRST), or runs here.
      return KnobOrCall(n, "POOL_FIRST", fmt::format("v{} = v{}", n.out[0], n.in[0]), why);
    if (!Call(n, "", why)) return false;
    if (auto it = act_after_pool_.find(i); it != act_after_pool_.end()) {
      const GraphNode& a = g_.nodes[it->second];
      GraphNode moved = a;
      moved.in = {n.out[0]};
      moved.out = {n.out[0]};
      moved.args[0] = Json{{"v", n.out[0]}};
      body += indent + "if POOL_FIRST:\n";
      indent += "    ";
      const std::string name =
          a.op.substr(a.op.find("::") == std::string::npos ? 0 : a.op.find("::") + 2);
      const bool ok = Call(moved, OutOfPlace(name), why);
      indent.resize(indent.size() - 4);
      return ok;
    }
    return true;
  }

 private:
  /// A view's sizes when its input's shape alone does not give them
  /// ([B*T, 3C] -> [B, T, 3C]): from a value already bound that shares all
  /// but at most one of the view's dims (its input before it was flattened), else
  /// with the captured sizes past the one -1.
  std::optional<std::string> ViewFromBound(const GraphNode& n) const {
    const auto& o = g_.Value(n.out[0]).shape;
    for (auto it = bound_.rbegin(); it != bound_.rend(); ++it) {
      const GraphValue& u = g_.Value(*it);
      if (u.shape.size() != o.size() || hidden_.count(*it)) continue;
      int differ = 0;
      for (std::size_t i = 0; i < o.size(); ++i) differ += u.shape[i] != o[i] ? 1 : 0;
      if (differ > 1) continue;
      std::vector<std::string> dims;
      for (std::size_t i = 0; i < o.size(); ++i)
        dims.push_back(u.shape[i] != o[i] ? "-1"
                       : o[i] == 1        ? "1"
                                          : fmt::format("v{}.shape[{}]", *it, i));
      return "[" + fmt::format("{}", fmt::join(dims, ", ")) + "]";
    }
    return ViewDims(fmt::format("v{}", n.in[0]), g_.Value(n.in[0]).shape, o, true);
  }

  /// `if KNOB: <line>`, else the node as the other rewrites have it; its
  /// inputs bound first.
  bool Branch(const GraphNode& n, const char* knob, const std::string& line, std::string* why) {
    for (int v : n.in)
      if (!Bind(v)) {
        *why = fmt::format("{} reads a constant made outside any op", n.op);
        return false;
      }
    body += indent + "if " + knob + ":\n";
    body += indent + "    " + line + "\n";
    body += indent + "else:\n";
    indent += "    ";
    const bool ok = Rest(n, why);
    indent.resize(indent.size() - 4);
    return ok;
  }

  /// `if KNOB: <line>`, else the node as captured; its inputs bound first.
  bool KnobOrCall(const GraphNode& n, const char* knob, const std::string& line, std::string* why) {
    for (int v : n.in)
      if (!Bind(v)) {
        *why = fmt::format("{} reads a constant made outside any op", n.op);
        return false;
      }
    body += indent + "if " + knob + ":\n";
    body += indent + "    " + line + "\n";
    body += indent + "else:\n";
    indent += "    ";
    const bool ok = Call(n, "", why);
    indent.resize(indent.size() - 4);
    return ok;
  }

  /// One op call; `as` replaces the op's name when not empty.
  bool Call(const GraphNode& n, const std::string& as, std::string* why) {
    for (int v : n.in)
      if (!Bind(v)) {
        *why = fmt::format("{} reads a constant made outside any op", n.op);
        return false;
      }
    if (n.base == "kopt_group_norm_affine") {
      // A group norm's statistics as its per-(sample, channel) scale and
      // shift (GroupNormsIntoTail): x * A + B follows in the tail.
      auto tensor = [&](std::size_t at) {
        const Json& a = n.args[at];
        return a.is_object() ? fmt::format("v{}", a.at("v").get<int>()) : std::string("None");
      };
      body += indent + fmt::format("v{}, v{} = _kopt_gn_affine(v{}, {}, {}, {}, {:.17g})\n",
                                   n.out[0], n.out[1], n.in[0], tensor(1), tensor(2),
                                   n.args[3].get<long long>(), n.args[4].get<double>());
      for (int v : n.out) bound_.insert(v);
      ++gn_affine_;
      return true;
    }
    static const std::set<std::string> kViews = {"view", "_unsafe_view", "_reshape_alias",
                                                 "reshape"};
    // In NHWC a view of the NCHW shape does not exist (or, with captured
    // strides, reads the wrong elements): a reshape copies where it must.
    // _reshape_alias carries the captured strides: always a reshape.
    const bool as_reshape =
        kViews.count(n.base) && (o_.channels_last || n.base == "_reshape_alias");
    const bool conv = o_.channels_last && IsConv2d(n, g_);
    const bool nchw_only = o_.channels_last &&
                           (n.base == "native_group_norm" || n.base == "group_norm") &&
                           !n.in.empty() && g_.Value(n.in[0]).shape.size() == 4;
    const bool flatten = as_reshape && o_.channels_last && !n.in.empty() && !n.out.empty() &&
                         g_.Value(n.in[0]).shape.size() == 4 &&
                         g_.Value(n.out[0]).shape.size() != 4;
    std::vector<std::string> parts;
    auto shaped = ShapeArgs(n, g_);
    if (kViews.count(n.base) && !shaped.count(1) && !n.out.empty())
      if (auto dims = ViewFromBound(n)) shaped[1] = *dims;
    for (std::size_t ai = 0; ai < n.args.size(); ++ai) {
      if (as_reshape && ai > 1) break;
      std::string x;
      if (auto it = shaped.find(ai); it != shaped.end()) {
        x = it->second;
      } else if (!Py(n.args[ai], g_, &x, why)) {
        return false;
      }
      if (conv && ai == 0) x = "_kopt_cl(" + x + ")";
      // PyTorch's CUDA group norm takes NCHW-contiguous input only
      // ("Expected X.is_contiguous(memory_format)" on an NHWC one, H100):
      // it reads NCHW, and what follows takes either order.
      if (nchw_only && ai == 0) x = "_kopt_out(" + x + ")";
      // A 4-D value flattened (before a classifier): NCHW order by kopt's
      // transpose where the value is NHWC, then the reshape is a view.
      if (flatten && ai == 0) x = "_kopt_out(" + x + ")";
      if (conv && ai == 1) {
        const GraphValue& w = g_.Value(n.in[1]);
        x = o_.reuse_weights && w.role == "param"
                ? fmt::format("self._kopt_weight({}, {})", Json(w.name).dump(), x)
                : "_kopt_cl(" + x + ")";
      }
      parts.push_back(x);
    }
    for (const auto& [key, a] : n.kwargs.items()) {
      if (key == "out") {
        *why = n.op + " writes into a given tensor";
        return false;
      }
      std::string x;
      // A tensor made inside the forward goes where its inputs are (the
      // graph may have been recorded on the meta device).
      if (key == "device" && !a.is_null()) {
        parts.push_back("device=_kopt_dev");
        continue;
      }
      if (!Py(a, g_, &x, why)) return false;
      parts.push_back(key + "=" + x);
    }
    const std::string name =
        !as.empty()  ? as
        : as_reshape ? "reshape"
                     : n.op.substr(n.op.find("::") == std::string::npos ? 0 : n.op.find("::") + 2);
    body += indent + fmt::format("_r = torch.ops.aten.{}({})\n", name, fmt::join(parts, ", "));
    if (n.out.size() == 1) {
      body +=
          indent + fmt::format("v{} = _r[0] if isinstance(_r, (tuple, list)) else _r\n", n.out[0]);
    } else {
      for (std::size_t j = 0; j < n.out.size(); ++j)
        body += indent + fmt::format("v{} = _r[{}]\n", n.out[j], j);
    }
    for (int v : n.out) bound_.insert(v);
    return true;
  }

 public:
  /// The fused tail's call: its inputs NCHW (or NHWC-dense), its outputs allocated NCHW.
  bool Tail(const FusedKernel& k, std::string* why) {
    const auto& F = g_.Value(k.inputs[static_cast<std::size_t>(k.shape_input)]).shape;
    // An elementwise tail over a 4-D shape in a channels-last replay reads
    // its full-size inputs in whatever dense order they come (an NHWC
    // convolution output stays NHWC: the kernel transposes it through
    // shared memory) and writes NCHW outputs, so neither a conversion
    // before it nor one after it runs.
    const bool nhwc = o_.channels_last && k.kind == "elementwise" && F.size() == 4;
    long long f_numel = 1;
    for (long long d : F) f_numel *= d;
    std::vector<std::string> ins;
    for (int v : k.inputs) {
      if (!Bind(v)) {
        *why = "the fused tail reads a constant made outside any op";
        return false;
      }
      const bool full = g_.Value(v).shape == F && g_.Value(v).Numel() == f_numel;
      ins.push_back(nhwc && full ? fmt::format("_kopt_either(v{})", v)
                                 : fmt::format("v{}.contiguous()", v));
    }
    const std::string shape_src =
        fmt::format("v{}", k.inputs[static_cast<std::size_t>(k.shape_input)]);
    std::vector<std::string> outs;
    for (std::size_t j = 0; j < g_.outputs.size(); ++j) {
      const GraphValue& o = g_.Value(g_.outputs[j]);
      const std::string dtype = o.dtype == "int64" ? "torch.int64" : "torch.float32";
      std::string shape;
      if (j < k.output_rows.size() && k.output_rows[j]) {
        const bool keep = o.shape.size() == F.size() && !o.shape.empty() && o.shape.back() == 1;
        shape = keep ? fmt::format("tuple({}.shape[:-1]) + (1,)", shape_src)
                     : fmt::format("tuple({}.shape[:-1])", shape_src);
      } else {
        if (o.shape != F) {
          *why = "an output's shape differs from the fused tail's iteration shape";
          return false;
        }
        shape = fmt::format("tuple({}.shape)", shape_src);
      }
      body += indent + fmt::format("o{} = torch.empty({}, dtype={}, device={}.device)\n", j, shape,
                                   dtype, shape_src);
      outs.push_back(fmt::format("o{}", j));
    }
    body += indent +
            fmt::format("_kopt_tail([{}], [{}])\n", fmt::join(ins, ", "), fmt::join(outs, ", "));
    body += indent + (outs.size() == 1 ? std::string("return o0\n")
                                       : fmt::format("return ({},)\n", fmt::join(outs, ", ")));
    return true;
  }

  /// Returns the graph's outputs (in NCHW order again, as the reference
  /// gives them).
  bool Return(std::string* why) {
    std::vector<std::string> outs;
    for (int id : g_.outputs) {
      if (!Bind(id)) {
        *why = "the forward returns a constant made outside any op";
        return false;
      }
      outs.push_back(o_.channels_last ? fmt::format("_kopt_out(v{})", id) : fmt::format("v{}", id));
    }
    if (outs.empty()) {
      *why = "the forward returns no tensor";
      return false;
    }
    body += indent + (outs.size() == 1 ? "return " + outs[0] + "\n"
                                       : fmt::format("return ({},)\n", fmt::join(outs, ", ")));
    return true;
  }

 private:
  const OpGraph& g_;
  ReplayOptions o_;
  std::set<int> bound_;
  std::set<int> conv_input_;
  std::map<std::size_t, std::size_t> act_before_pool_, act_after_pool_;
  std::map<std::size_t, LibraryEpilogue> epilogue_at_gemm_, epilogue_at_act_;
  std::map<std::size_t, KernelGemm> kgemm_at_;     ///< by the GEMM's node
  std::set<std::size_t> kgemm_act_;                ///< activations the GEMM kernel applies
  std::map<std::size_t, KernelBatchNorm> kbn_at_;  ///< by the BatchNorm's node
  std::map<std::size_t, int> kbn_fused_;        ///< add or ReLU it applies -> the value passed on
  std::map<std::size_t, int> kbn_result_;       ///< by the BatchNorm's node: after its add and ReLU
  std::map<std::size_t, KernelPool> kpool_at_;  ///< by the pool's node
  std::set<std::size_t> kpool_act_;             ///< activations the pool kernel applies
  std::map<std::size_t, std::size_t> kpool_conv_;  ///< convolution -> pool that adds its bias
  std::set<std::size_t> in_attention_;
  std::set<int> hidden_;  ///< values bound on one branch only (attention regions, pool indices)
  std::map<std::size_t, AttentionRegion> attention_at_;  ///< by its last node
  int gn_affine_ = 0;
};

const char* kLayoutPrelude = R"PY(
# ---- kopt: the forward replayed with its convolutions in channels-last (NHWC) order ----
import torch as _kopt_torch

CHANNELS_LAST = 1  # kopt:knob CHANNELS_LAST 1 {0,1} convolutions (and the ops after them) in NHWC, the layout cuDNN's tensor-core kernels read; 0 keeps NCHW


def _kopt_transposable(t):
    # A layout conversion kopt's transpose kernel takes: on the GPU, float32,
    # large enough that the launch does not dominate.
    return (_KOPT_TRANSPOSE_SOURCE is not None and LAYOUT_KERNEL and t.is_cuda
            and t.dtype == _kopt_torch.float32 and t.numel() >= (1 << 16))


def _kopt_transpose(x, y):
    # y[p, b, a] = x[p, a, b], both contiguous 3-D views.
    if not _kopt_transpose_mod:
        import kopt
        _kopt_transpose_mod.append(kopt.load_cuda(_KOPT_TRANSPOSE_SOURCE, name="kopt_transpose"))
    _kopt_transpose_mod[0]([x], [y])


_kopt_transpose_mod = []


def _kopt_cl(t):
    if CHANNELS_LAST and isinstance(t, _kopt_torch.Tensor) and t.dim() == 4:
        cl = _kopt_torch.channels_last
        if _kopt_transposable(t) and t.is_contiguous() and not t.is_contiguous(memory_format=cl):
            n, c, h, w = t.shape
            y = _kopt_torch.empty_like(t, memory_format=cl)
            _kopt_transpose(t.view(n, c, h * w), y.permute(0, 2, 3, 1).view(n, h * w, c))
            return y
        return t.contiguous(memory_format=cl)
    return t


def _kopt_out(t):
    # The reference returns NCHW-contiguous tensors: so does the replay.
    if not isinstance(t, _kopt_torch.Tensor):
        return t
    if (t.dim() == 4 and _kopt_transposable(t) and not t.is_contiguous()
            and t.is_contiguous(memory_format=_kopt_torch.channels_last)):
        n, c, h, w = t.shape
        y = _kopt_torch.empty(tuple(t.shape), dtype=t.dtype, device=t.device)
        _kopt_transpose(t.permute(0, 2, 3, 1).view(n, h * w, c), y.view(n, c, h * w))
        return y
    return t.contiguous()


def _kopt_either(t):
    # A full-size input of the fused tail as it is when NCHW- or NHWC-dense
    # (its kernel reads both), else NCHW-contiguous.
    if t.is_contiguous() or (t.dim() == 4 and t.is_contiguous(memory_format=_kopt_torch.channels_last)):
        return t
    return t.contiguous()
)PY";

const char* kAttentionPrelude = R"PY(
# ---- kopt: attention as one fused call ----
import torch as _kopt_torch

SDPA = 1  # kopt:knob SDPA 1 {{0,1}} {} attention region(s) (Q K^T, scale, causal mask, softmax, P V) as PyTorch's fused scaled_dot_product_attention, no score matrix in DRAM; 0 replays the ops


def _kopt_sdpa(q, k, v, causal, scale):
    f = getattr(_kopt_torch.nn.functional, "scaled_dot_product_attention", None)
    if f is not None:
        return f(q, k, v, is_causal=causal, scale=scale)
    # A torch without it (before 2.0): the same math, unfused.
    a = _kopt_torch.matmul(q, k.transpose(-2, -1)) * scale
    if causal:
        n, m = a.shape[-2], a.shape[-1]
        mask = _kopt_torch.ones(n, m, dtype=_kopt_torch.bool, device=a.device).triu(1)
        a = a.masked_fill(mask, float("-inf"))
    return _kopt_torch.matmul(_kopt_torch.softmax(a, dim=-1), v)
)PY";

// The GEMM helper; {0} is the GEMM count, {1} the kernel's source.
const char* kGemmPrelude = R"PY(
# ---- kopt: GEMMs as kopt's own kernel, bias and activation in its epilogue ----
import re as _kopt_re
import torch as _kopt_torch
import kopt as _kopt_lib

GEMM_3XTF32 = 1  # kopt:knob GEMM_3XTF32 1 {{0,1,2}} {0} GEMM(s) as kopt's strict-fp32 tensor-core kernel (3xTF32 split precision) with the bias and activation applied as it stores: 1 those of at least 2^27 multiply-adds (smaller ones stay cuBLAS: the kernel's split pass and launches would cost more than they save), 2 all; 0 none

_KOPT_GEMM_SOURCE = r"""
{1}"""
_kopt_gemms = {{}}


def _kopt_gemm(x, w, bias, act):
    # act(x @ w + bias), x [M, K] and w [K, N] float32; w may be W.t() of a
    # contiguous [N, K] weight (nn.Linear), which the kernel reads as it is.
    dev = x.device
    if GEMM_3XTF32 == 1:
        if x.shape[0] * x.shape[1] * w.shape[1] < (1 << 27):
            y = _kopt_torch.mm(x, w) if bias is None else _kopt_torch.addmm(bias, x, w)
            if act == 1:
                return _kopt_torch.relu(y)
            if act in (2, 3):
                return _kopt_torch.nn.functional.gelu(y, approximate="tanh" if act == 3 else "none")
            return y
    trans = w.stride(0) == 1 and w.stride(1) == w.shape[0]
    key = (int(trans), int(bias is not None), act)
    mod = _kopt_gemms.get(key)
    if mod is None:
        src = _KOPT_GEMM_SOURCE
        for name, value in (("KOPT_TRANS_B", key[0]), ("KOPT_BIAS", key[1]), ("KOPT_EPILOGUE", act)):
            src = _kopt_re.sub(r"(?m)^#define %s -?\d+" % name, "#define %s %d" % (name, value), src)
        mod = _kopt_gemms[key] = _kopt_lib.load_cuda(src, name="kopt_gemm")
    out = _kopt_torch.empty((x.shape[0], w.shape[1]), dtype=_kopt_torch.float32, device=dev)
    ins = [x.contiguous(), w.t() if trans else w.contiguous()]
    if bias is not None:
        ins.append(bias.contiguous())
    mod(ins, [out])
    return out
)PY";

// The BatchNorm helper; {0} is the count, {1} what it fuses, {2} the source.
const char* kBatchNormPrelude = R"PY(
# ---- kopt: BatchNorms as kopt's channels-last kernel ----
import re as _kopt_re
import torch as _kopt_torch
import kopt as _kopt_lib

BN_KERNEL = 1  # kopt:knob BN_KERNEL 1 {{0,1}} {0} BatchNorm(s) in training mode over NHWC values as kopt's kernel (the statistics in one read with each thread on a channel group, then one pass applying scale and shift{1}); 0 PyTorch's

_KOPT_BN_SOURCE = r"""
{2}"""
_kopt_bn_mods = {{}}


def _kopt_bn(x, w, b, rm, rv, momentum, eps, act, res, nchw=0):
    # act(batch_norm(x) + res) in training mode, the running statistics
    # updated (num_batches_tracked stays the captured add_'s). The kernel
    # takes channels-last values: NHWC (as the [N, H, W, C] view) or [N, C];
    # anything else runs as PyTorch's ops. nchw=1 (a value the forward
    # returns): an NHWC x gives an NCHW-contiguous result, written so by the
    # kernel's apply pass.
    cl = _kopt_torch.channels_last
    rows = None
    if x.dtype == _kopt_torch.float32:
        if x.dim() == 2 and x.is_contiguous():
            rows = lambda t: t
        elif x.dim() == 4 and x.is_contiguous(memory_format=cl):
            rows = lambda t: t.permute(0, 2, 3, 1)
    nchw = int(bool(nchw) and rows is not None and x.dim() == 4)
    if rows is not None and res is not None:
        if res.shape != x.shape or res.dtype != x.dtype:
            rows = None
        else:
            res = res.contiguous() if x.dim() == 2 else res.contiguous(memory_format=cl)
    if rows is None:
        y = _kopt_torch.nn.functional.batch_norm(x, rm, rv, w, b, True, momentum, eps)
        if res is not None:
            y = y + res
        return _kopt_torch.relu(y) if act == 1 else y
    key = (int(w is not None), int(rm is not None), int(res is not None), act,
           round(eps * 1e12), round(momentum * 1e12), nchw)
    mod = _kopt_bn_mods.get(key)
    if mod is None:
        src = _KOPT_BN_SOURCE
        for name, value in (("KOPT_AFFINE", key[0]), ("KOPT_RUNNING", key[1]), ("KOPT_TRACKED", 0),
                            ("KOPT_RESIDUAL", key[2]), ("KOPT_ACT", act), ("KOPT_EPS_E12", key[4]),
                            ("KOPT_MOMENTUM_E12", key[5]), ("KOPT_OUT_NCHW", nchw)):
            src = _kopt_re.sub(r"(?m)^#define %s -?\d+" % name, "#define %s %d" % (name, value), src)
        mod = _kopt_bn_mods[key] = _kopt_lib.load_cuda(src, name="kopt_batch_norm")
    y = _kopt_torch.empty(tuple(x.shape), dtype=x.dtype, device=x.device) if nchw else _kopt_torch.empty_like(x)
    ins = [rows(x)]
    if w is not None:
        ins += [w.contiguous(), b.contiguous()]
    if rm is not None:
        ins += [rm, rv]
    if res is not None:
        ins.append(rows(res))
    mod(ins, [y if nchw else rows(y)])
    return y
)PY";

// The pool helper; {0} is the count, {1} what it applies, {2} the source.
const char* kGroupNormPrelude = R"PY(
# ---- kopt: group norms as their statistics; x * scale + shift runs in the fused tail ----
import torch as _kopt_torch


def _kopt_gn_affine(x, w, b, groups, eps):
    """A group norm over x [N, C, *] as y = x * a + s, with a = rstd * weight
    and s = bias - mean * a per (sample, channel), each [N, C, 1, ...]."""
    t = _kopt_torch
    n, c = x.shape[0], x.shape[1]
    cg = c // groups
    if x.is_contiguous():
        # Each group is one contiguous row.
        var, mean = t.var_mean(x.view(n, groups, -1), dim=-1, keepdim=True, correction=0)
    else:
        # Any other order (NHWC): each channel's moments over its positions,
        # then the group's from its channels' (equal counts): the mean of the
        # channel variances plus the variance of the channel means.
        cvar, cmean = t.var_mean(x, dim=tuple(range(2, x.dim())), correction=0)
        cvar, cmean = cvar.view(n, groups, cg), cmean.view(n, groups, cg)
        mean = cmean.mean(-1, keepdim=True)
        var = cvar.mean(-1, keepdim=True) + (cmean - mean).square().mean(-1, keepdim=True)
    a = t.rsqrt(var + eps).expand(n, groups, cg)
    if w is not None:
        a = a * w.view(groups, cg)
    s = (t.addcmul(b.view(groups, cg), mean, a, value=-1) if b is not None
         else (-mean) * a)
    shape = (n, c) + (1,) * (x.dim() - 2)
    return a.reshape(shape), s.reshape(shape)
)PY";

const char* kPoolPrelude = R"PY(
# ---- kopt: max pools over NHWC values as kopt's kernel ----
import re as _kopt_re
import torch as _kopt_torch
import kopt as _kopt_lib

POOL_KERNEL = 1  # kopt:knob POOL_KERNEL 1 {{0,1}} {0} max pool(s) over NHWC values as kopt's kernel{1}, no int64 indices written; 0 PyTorch's

_KOPT_POOL_SOURCE = r"""
{2}"""
_kopt_pool_mods = {{}}


def _kopt_pooled(n, k, s, p, ceil):
    # torch's pooling output size (dilation 1).
    o = (n + 2 * p - k + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _kopt_pool(x, b, k, s, p, ceil, act):
    # act(max_pool2d(x) + b[c]), equal bit for bit to the pool of act(x + b)
    # (adding b and the activation are monotone). kopt's kernel for a
    # channels-last float32 x; PyTorch's ops otherwise.
    cl = _kopt_torch.channels_last
    if (x.dtype == _kopt_torch.float32 and x.dim() == 4 and x.is_contiguous(memory_format=cl)
            and (b is None or (b.dtype == x.dtype and b.dim() == 1 and b.shape[0] == x.shape[1]))):
        n, c, h, w = x.shape
        oh, ow = _kopt_pooled(h, k[0], s[0], p[0], ceil), _kopt_pooled(w, k[1], s[1], p[1], ceil)
        key = (k, s, p, bool(ceil), act, b is not None)
        mod = _kopt_pool_mods.get(key)
        if mod is None:
            src = _KOPT_POOL_SOURCE
            for name, value in (("KOPT_KH", k[0]), ("KOPT_KW", k[1]), ("KOPT_SH", s[0]), ("KOPT_SW", s[1]),
                                ("KOPT_PH", p[0]), ("KOPT_PW", p[1]), ("KOPT_CEIL_MODE", int(bool(ceil))),
                                ("KOPT_BIAS", int(b is not None)), ("KOPT_ACT", act)):
                src = _kopt_re.sub(r"(?m)^#define %s -?\d+" % name, "#define %s %d" % (name, value), src)
            mod = _kopt_pool_mods[key] = _kopt_lib.load_cuda(src, name="kopt_max_pool")
        y = _kopt_torch.empty((n, c, oh, ow), dtype=x.dtype, device=x.device, memory_format=cl)
        ins = [x.permute(0, 2, 3, 1)] + ([b.contiguous()] if b is not None else [])
        mod(ins, [y.permute(0, 2, 3, 1)])
        return y
    y = _kopt_torch.nn.functional.max_pool2d(x, k, s, p, 1, bool(ceil))
    if b is not None:
        y = y + b.view(1, -1, 1, 1)
    if act == 1:
        return _kopt_torch.relu(y)
    if act == 2:
        return _kopt_torch.nn.functional.hardtanh(y, 0.0, 6.0)
    return y
)PY";

const char* kLayoutMethods = R"PY(
    def forward(self, *args):
        # cuDNN's algorithm choice stays the process's own (cudnn.benchmark
        # untouched): the search's pick is a per-process lottery (on an H200
        # the resnet block's replay ran 0.60 or 0.83 ms by it), and its plan
        # cache, keyed without the flag, would carry the pick to every later
        # convolution of the same shape in the process, the reference's too.
        return self._kopt_forward(*args)

    def _kopt_weight(self, name, w):
        # A convolution's weight in NHWC, made once and kept until the
        # parameter changes (its storage or version).
        if not CHANNELS_LAST or w.dim() != 4:
            return w
        cache = self.__dict__.setdefault("_kopt_nhwc_weights", {})
        key = (w.data_ptr(), w._version, tuple(w.shape), w.dtype, w.device)
        hit = cache.get(name)
        if hit is None or hit[0] != key:
            hit = (key, w.contiguous(memory_format=_kopt_torch.channels_last))
            cache[name] = hit
        return hit[1]

    def _kopt_forward(self, *args):
)PY";

}  // namespace

namespace {

/// `source` (one kernel) with each of its knobs renamed PREFIX + name,
/// everywhere the name stands as a word: a replay embeds several kernels
/// in one file, and the tuner needs one kopt:knob line per name (the
/// transpose, pool and tail kernels all have a VEC).
std::string PrefixedKnobs(std::string source, const std::string& prefix) {
  static const std::regex knob(R"(//\s*kopt:knob\s+([A-Za-z_][A-Za-z0-9_]*))");
  std::set<std::string> names;
  for (std::sregex_iterator it(source.begin(), source.end(), knob), end; it != end; ++it)
    names.insert((*it)[1].str());
  for (const std::string& n : names)
    source = std::regex_replace(source, std::regex("\\b" + n + "\\b"), prefix + n);
  return source;
}

}  // namespace

std::optional<std::string> ReplaySource(const OpGraph& g, const FusedKernel* tail,
                                        std::size_t tail_from, const std::string& task_source,
                                        const ReplayOptions& given, std::string* why) {
  // Each embedded kernel's knobs under a name of its own.
  ReplayOptions options = given;
  for (auto [src, prefix] :
       {std::pair{&options.transpose_source, "LAYOUT_"}, std::pair{&options.gemm_source, "GEMM_"},
        std::pair{&options.bn_source, "BN_"}, std::pair{&options.pool_source, "POOL_"}})
    if (!src->empty()) *src = PrefixedKnobs(*src, prefix);
  if (tail &&
      (tail->shape_input < 0 || tail->shape_input >= static_cast<int>(tail->inputs.size()))) {
    *why = "the fused tail reads no input element by element, so its output shape is unknown";
    return std::nullopt;
  }
  if (options.channels_last) {
    if (std::string w = WhyNotChannelsLast(g); !w.empty()) {
      *why = w;
      return std::nullopt;
    }
  }
  // A replay with rewrites keeps both ways of running the tail (FUSED_TAIL).
  const bool rewrites = options.channels_last || options.sdpa || options.pool_first ||
                        options.lt_epilogue || !options.gemm_source.empty() ||
                        !options.bn_source.empty() || !options.pool_source.empty();
  const std::size_t first = tail ? std::min(tail_from, g.nodes.size()) : g.nodes.size();
  Replay r(g, options, first);
  for (std::size_t i = 0; i < first; ++i)
    if (!r.Node(g.nodes[i], why)) return std::nullopt;
  if (tail && rewrites) {
    // Both ways of running the tail, chosen by a knob: the values either
    // reads are bound before the branch.
    for (int v : tail->inputs)
      if (!r.Bind(v)) {
        *why = "the fused tail reads a constant made outside any op";
        return std::nullopt;
      }
    for (std::size_t i = first; i < g.nodes.size(); ++i)
      for (int v : g.nodes[i].in)
        if (g.Value(v).source == "abi") r.Bind(v);
    r.body += r.indent + "if FUSED_TAIL:\n";
    r.indent += "    ";
    if (!r.Tail(*tail, why)) return std::nullopt;
    r.indent.resize(r.indent.size() - 4);
    for (std::size_t i = first; i < g.nodes.size(); ++i)
      if (!r.Node(g.nodes[i], why)) return std::nullopt;
    if (!r.Return(why)) return std::nullopt;
  } else if (tail) {
    if (!r.Tail(*tail, why)) return std::nullopt;
  } else if (!r.Return(why)) {
    return std::nullopt;
  }

  std::string src =
      rewrites
          ? "# Generated by kopt's planner (src/plan/hybrid.cc): the forward replayed as PyTorch\n"
            "# operators from the captured graph, with the rewrites its knobs below name; the\n"
            "# task's own source follows, so ModelNew has the Model's parameters.\n"
          : "# Generated by kopt's planner (src/plan/hybrid.cc): the ops before the tail run as "
            "PyTorch\n"
            "# operators, replayed from the captured graph; the tail is one generated kernel.\n"
            "# The task's own source follows, so ModelNew has the Model's parameters.\n";
  src += task_source;
  if (!src.empty() && src.back() != '\n') src += "\n";
  if (options.channels_last) {
    src += kLayoutPrelude;
    if (options.transpose_source.empty())
      src += "\n_KOPT_TRANSPOSE_SOURCE = None\nLAYOUT_KERNEL = 0\n";
    else
      src +=
          "\nLAYOUT_KERNEL = 1  # kopt:knob LAYOUT_KERNEL 1 {0,1} NCHW <-> NHWC conversions of "
          "activations by kopt's shared-memory transpose kernel (both sides coalesced); 0 by "
          "PyTorch's strided copy\n\n_KOPT_TRANSPOSE_SOURCE = r\"\"\"\n" +
          options.transpose_source + "\"\"\"\n";
  }
  if (r.EpilogueCount() > 0)
    src += fmt::format(
        "\nLT_EPILOGUE = 1  # kopt:knob LT_EPILOGUE 1 {{0,1}} {} GEMM(s) with their bias and "
        "activation in one cuBLASLt call (_addmm_activation), no separate activation pass; 0 "
        "keeps them apart\n",
        r.EpilogueCount());
  if (r.AttentionCount() > 0)
    src += fmt::format(fmt::runtime(kAttentionPrelude), r.AttentionCount());
  if (r.KernelGemmCount() > 0)
    src += fmt::format(fmt::runtime(kGemmPrelude), r.KernelGemmCount(), options.gemm_source);
  if (r.KernelBnCount() > 0)
    src += fmt::format(fmt::runtime(kBatchNormPrelude), r.KernelBnCount(),
                       r.KernelBnFusedCount() ? ", the residual add and ReLU after it" : "",
                       options.bn_source);
  if (r.KernelPoolCount() > 0) {
    std::vector<std::string> applied;
    if (r.KernelPoolBiasCount() > 0)
      applied.push_back(fmt::format("{} convolution bias(es)", r.KernelPoolBiasCount()));
    if (r.KernelPoolActCount() > 0)
      applied.push_back(fmt::format("{} activation(s)", r.KernelPoolActCount()));
    src += fmt::format(fmt::runtime(kPoolPrelude), r.KernelPoolCount(),
                       applied.empty() ? std::string()
                                       : fmt::format(" with {} applied after the max",
                                                     fmt::join(applied, " and ")),
                       options.pool_source);
  }
  if (r.GroupNormAffineCount() > 0) src += kGroupNormPrelude;
  if (r.PoolFirstCount() > 0)
    src += fmt::format(
        "\nPOOL_FIRST = 1  # kopt:knob POOL_FIRST 1 {{0,1}} {} activation(s) that never decrease "
        "run after the max pool that follows them, on its smaller output (max(f(x)) == "
        "f(max(x))); 0 keeps the order\n",
        r.PoolFirstCount());
  if (tail) {
    src += "\n\n# ---- kopt: the fused tail ----\nimport kopt as _kopt_lib\n\n";
    if (rewrites)
      src +=
          "FUSED_TAIL = 1  # kopt:knob FUSED_TAIL 1 {0,1} the ops after the library calls as one "
          "generated kernel (reading NCHW or NHWC, writing NCHW); 0 replays them as PyTorch "
          "operators\n\n";
    src += "CUDA_SOURCE = r\"\"\"\n" +
           (rewrites ? PrefixedKnobs(tail->source, "TAIL_") : tail->source) +
           "\"\"\"\n\n_kopt_tail = _kopt_lib.load_cuda(CUDA_SOURCE)\n";
  }
  src += "\n\nclass ModelNew(Model):";
  if (options.channels_last) {
    src += kLayoutMethods;
  } else {
    src += "\n    def forward(self, *args):\n";
  }
  src +=
      "        _p = dict(self.named_parameters())\n"
      "        _b = dict(self.named_buffers())\n"
      "        _kopt_dev = next((a.device for a in args if isinstance(a, torch.Tensor)), None)\n";
  src += r.body;
  return src;
}

std::optional<std::string> HybridSource(const OpGraph& g, std::size_t first, const FusedKernel& k,
                                        const std::string& task_source, std::string* why) {
  return ReplaySource(g, &k, first, task_source, ReplayOptions{}, why);
}

std::string WhyNotChannelsLast(const OpGraph& g) {
  bool any = false;
  std::set<int> converted;  // values the replay replaces by an NHWC copy
  for (const GraphNode& n : g.nodes)
    if (IsConv2d(n, g)) {
      any = true;
      for (std::size_t i = 0; i < std::min<std::size_t>(2, n.in.size()); ++i)
        if (g.Value(n.in[i]).source == "abi") converted.insert(n.in[i]);
    }
  if (!any) return "the forward has no 2-D convolution";
  for (const GraphNode& n : g.nodes) {
    // Ops that read strides rather than values.
    if (n.base == "as_strided" || n.base == "as_strided_scatter" || n.base == "set")
      return n.op + " reads its input's strides, which NHWC order changes";
    if (n.inplace && !n.in.empty() && converted.count(n.in[0]))
      return n.op + " writes in place to a tensor the replay would read from an NHWC copy";
  }
  return "";
}

std::string GraphedSource(const std::string& module_source, const std::string& eager_class) {
  std::string src = module_source;
  if (!src.empty() && src.back() != '\n') src += "\n";
  src +=
      "\n\n# ---- kopt: the forward captured in a CUDA graph per input signature, then replayed "
      "----\nimport torch as _kopt_torch\n\n_KoptEager = " +
      eager_class + "\n\n\n";
  src += R"PY(class ModelNew(_KoptEager):
    _kopt_max_graphs = 4

    def forward(self, *args):
        t = _kopt_torch
        if (not args or not all(isinstance(a, t.Tensor) and a.is_cuda for a in args)
                or t.cuda.is_current_stream_capturing()):
            return super().forward(*args)
        graphs = self.__dict__.setdefault("_kopt_graphs", {})
        state = tuple(p.data_ptr() for p in self.parameters()) + tuple(
            b.data_ptr() for b in self.buffers())
        key = (tuple((tuple(a.shape), a.stride(), a.dtype, a.device) for a in args), state)
        entry = graphs.get(key)
        if entry is None:
            entry = self._kopt_capture(args)
            if len(graphs) >= self._kopt_max_graphs:
                graphs.pop(next(iter(graphs)))
            graphs[key] = entry
        graph, static_in, static_out = entry
        for s, a in zip(static_in, args):
            s.copy_(a)
        graph.replay()
        if isinstance(static_out, t.Tensor):
            return static_out.clone()
        return type(static_out)(o.clone() if isinstance(o, t.Tensor) else o for o in static_out)

    def _kopt_capture(self, args):
        t = _kopt_torch
        static_in = [a.clone() for a in args]
        with t.no_grad():
            side = t.cuda.Stream()
            side.wait_stream(t.cuda.current_stream())
            with t.cuda.stream(side):
                for _ in range(2):  # lazy initialisation and autotuning stay out of the graph
                    super().forward(*static_in)
            t.cuda.current_stream().wait_stream(side)
            graph = t.cuda.CUDAGraph()
            with t.cuda.graph(graph):
                static_out = super().forward(*static_in)
        return graph, static_in, static_out
)PY";
  return src;
}

}  // namespace kopt
