#include "plan/fusion.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

namespace kopt {
namespace {

// Ops that only re-label a contiguous tensor's shape: the element order is
// unchanged, so a fused kernel reads them as the value they view.
const std::set<std::string> kViewOps = {"view",       "_unsafe_view", "reshape",    "unsqueeze",
                                        "squeeze",    "alias",        "detach",     "clone",
                                        "contiguous", "expand",       "lift_fresh", "flatten"};

enum class Kind { kElem, kRow };

/// A value as the kernel sees it.
struct Val {
  Kind kind = Kind::kElem;
  std::string name;   ///< the C variable that holds it inside the kernel
  int leaf = -1;      ///< index into Program::leaves when it is read from an ABI input
  std::string dtype;  ///< "float32", "bfloat16", "float16", or "int64" for an arg-reduction's index
};

/// The dtypes a fused kernel reads and writes; it computes in float either
/// way, rounding each 16-bit value an op makes like PyTorch does.
bool Supported(const std::string& dtype) {
  return dtype == "float32" || dtype == "bfloat16" || dtype == "float16";
}
/// The C type of `dtype` in memory.
std::string CType(const std::string& dtype) {
  if (dtype == "bfloat16") return "__nv_bfloat16";
  if (dtype == "float16") return "__half";
  if (dtype == "int64") return "long long";
  return "float";
}
std::string AbiDtype(const std::string& ctype) {
  if (ctype == "__nv_bfloat16") return "KOPT_BFLOAT16";
  if (ctype == "__half") return "KOPT_FLOAT16";
  if (ctype == "long long") return "KOPT_INT64";
  return "KOPT_FLOAT32";
}
/// `expr` (a float) rounded to `dtype` and back, for a 16-bit value.
std::string Rounded(const std::string& dtype, const std::string& expr) {
  if (dtype == "bfloat16") return "kopt_round_bf16(" + expr + ")";
  if (dtype == "float16") return "kopt_round_f16(" + expr + ")";
  return expr;
}

/// An ABI input the kernel reads.
struct Leaf {
  int abi = 0;
  std::vector<long long>
      shape;          ///< as the graph uses it (a view of the input keeps its memory order)
  bool full = false;  ///< the same number of elements as F: read at the linear index
  bool col = false;   ///< one value per column of F ([C], [1, C]): read at i % cols
  /// Broadcast against the rows' shape (F without its reduced dim: a bias
  /// [C] added to a mean over H and W of [N, C, H, W]): read at the row index.
  bool lead = false;
  std::string dtype = "float32";  ///< its element type in memory (read as float)
  /// The ABI tensor's captured shape when the graph reads it viewed as
  /// `shape` (v.view(N, 1)); empty when the two are the same.
  std::vector<long long> src;
};

/// A value computed in the kernel: `name = expr`, in element or row scope.
struct Def {
  Kind scope = Kind::kElem;
  std::string name;
  std::string type = "float";
  std::string expr;
  std::vector<std::string> deps;  ///< names it reads (defs, leaves, stats)
};

/// A reduction over the row: acc combines `input` (an element-scope name).
struct Stat {
  std::string name;  ///< row-scope result (argmax: name is the index, name_v the value)
  std::string op;    ///< sum, max, min, argmax, argmin
  std::string input;
  int pass = 0;
};

struct Output {
  int abi = 0;       ///< out[] index
  std::string name;  ///< the value stored
  Kind kind = Kind::kElem;
  std::string type;  ///< in memory: float, __nv_bfloat16, __half or long long
  std::string reg;   ///< in registers: float (16-bit outputs too) or long long
};

struct Program {
  std::vector<long long> F;  ///< the iteration shape
  std::vector<Leaf> leaves;
  std::vector<Def> defs;  ///< in dependency order
  std::vector<Stat> stats;
  std::vector<Output> outputs;
  std::vector<std::string> ops;
  int temp = 0;
  std::string NewName(const char* prefix) { return fmt::format("{}{}", prefix, temp++); }
};

std::string FloatLiteral(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return "(" + s + "f)";
}

long long Numel(const std::vector<long long>& s) {
  long long n = 1;
  for (long long d : s) n *= d;
  return n;
}

/// Right-aligned broadcast of `s` to `f`.
bool BroadcastsTo(const std::vector<long long>& s, const std::vector<long long>& f) {
  if (s.size() > f.size()) {
    for (std::size_t i = 0; i + f.size() < s.size(); ++i)
      if (s[i] != 1) return false;
  }
  for (std::size_t k = 1; k <= std::min(s.size(), f.size()); ++k) {
    const long long a = s[s.size() - k], b = f[f.size() - k];
    if (a != 1 && a != b) return false;
  }
  return true;
}

/// A dim argument normalized against `rank`; nullopt when it is not one integer.
std::optional<int> OneDim(const Json* j, int rank) {
  if (!j) return std::nullopt;
  const Json* d = j;
  if (j->is_array()) {
    if (j->size() != 1) return std::nullopt;
    d = &j->at(0);
  }
  if (!d->is_number_integer()) return std::nullopt;
  int v = d->get<int>();
  if (v < 0) v += rank;
  if (v < 0 || v >= rank) return std::nullopt;
  return v;
}

class Builder {
 public:
  /// The region: nodes [first, end) of `g`, returning `outputs`. Values made
  /// before `first` are the kernel's inputs like the ABI inputs; with
  /// `region` set, in[] is numbered in order of first use (FusedKernel::inputs)
  /// instead of by ABI index.
  /// `trail` > 1: the graph's shapes merge F's last `trail` dims into one
  /// (MergeTrailingDims); at run time cols is their product.
  Builder(const OpGraph& g, std::size_t first, std::vector<int> outputs, bool region, int trail = 1)
      : g_(g), first_(first), outputs_(std::move(outputs)), region_(region), trail_(trail) {}

  FusionResult Run() {
    FusionResult r;
    if (!ChooseShape(&r.why_not)) return r;
    for (std::size_t i = first_; i < g_.nodes.size(); ++i) {
      const GraphNode& n = g_.nodes[i];
      std::string why;
      if (!Node(n, &why)) {
        r.why_not = why;
        return r;
      }
      p_.ops.push_back(n.op);
    }
    if (!Outputs(&r.why_not)) return r;
    r.kernel = Emit();
    r.kernel->inputs = inputs_;
    for (const Leaf& l : p_.leaves)
      if (l.full) {
        r.kernel->shape_input = l.abi;
        break;
      }
    for (const Output& o : p_.outputs) r.kernel->output_rows.push_back(o.kind == Kind::kRow);
    return r;
  }

 private:
  // ---- analysis ----------------------------------------------------------

  /// F: the input of the first last-dim reduction when there is one, else
  /// the largest output.
  bool ChooseShape(std::string* why) {
    for (std::size_t i = first_; i < g_.nodes.size(); ++i) {
      const GraphNode& n = g_.nodes[i];
      if (n.matrix) {
        *why = n.op +
               " is a matrix op: it goes to a library call or a GEMM template, not a fused chain";
        return false;
      }
    }
    long long best = -1;
    for (int o : outputs_) {
      const GraphValue& v = g_.Value(o);
      if (v.Numel() > best) {
        best = v.Numel();
        p_.F = v.shape;
      }
    }
    for (std::size_t i = first_; i < g_.nodes.size(); ++i) {
      const GraphNode& n = g_.nodes[i];
      if (IsRowReduction(n.base) && !n.in.empty()) {
        const GraphValue& x = g_.Value(n.in[0]);
        if (x.Numel() >= best) {
          p_.F = x.shape;
          reduces_ = true;
          // A reduction over another dim than the last, of a line longer
          // than one: the column kernel.
          if (auto d = ReductionDim(n, x.shape);
              d && *d + 1 < static_cast<int>(x.shape.size()) && x.shape[*d] > 1)
            rdim_ = *d;
        }
        break;
      }
    }
    if (p_.F.empty() || Numel(p_.F) <= 0) {
      *why = "the forward returns no tensor with elements";
      return false;
    }
    return true;
  }

  static bool IsRowReduction(const std::string& b) {
    static const std::set<std::string> k = {"sum",
                                            "mean",
                                            "amax",
                                            "amin",
                                            "max",
                                            "min",
                                            "argmax",
                                            "argmin",
                                            "var",
                                            "std",
                                            "var_mean",
                                            "std_mean",
                                            "logsumexp",
                                            "_softmax",
                                            "softmax",
                                            "_log_softmax",
                                            "log_softmax",
                                            "native_layer_norm",
                                            "linalg_vector_norm",
                                            "norm"};
    return k.count(b) > 0;
  }

  long long Cols() const { return p_.F.back(); }
  /// The dim every reduction reduces (F's last unless they say otherwise):
  /// along the last, a block or warp per row; along another, a thread per
  /// line of F along it (a "column" kernel, coalesced across the lines).
  int RDim() const { return rdim_ >= 0 ? rdim_ : static_cast<int>(p_.F.size()) - 1; }
  bool Column() const { return RDim() != static_cast<int>(p_.F.size()) - 1; }
  bool RowKernel() const { return !p_.stats.empty() && !Column(); }
  long long RowLen() const { return p_.F[static_cast<std::size_t>(RDim())]; }
  long long Rows() const { return Numel(p_.F) / std::max(1LL, RowLen()); }

  /// The one dim reduction `n` reduces over its input of rank `rank`, or
  /// nullopt (several dims, all of them, a layer norm over more than the last).
  static std::optional<int> ReductionDim(const GraphNode& n, const std::vector<long long>& shape) {
    const int rank = static_cast<int>(shape.size());
    if (n.base == "native_layer_norm") {
      const Json* ns = OpGraph::Arg(n, 1, "normalized_shape");
      if (ns && ns->is_array() && ns->size() == 1 && ns->at(0).is_number_integer() && rank > 0 &&
          ns->at(0).get<long long>() == shape.back())
        return rank - 1;
      return std::nullopt;
    }
    if (n.base == "linalg_vector_norm" || n.base == "norm")
      return OneDim(OpGraph::Arg(n, 2, "dim"), rank);
    return OneDim(OpGraph::Arg(n, 1, "dim"), rank);
  }

  /// The kernel's view of value `id`, creating a leaf for an ABI input
  /// (with `as_shape` instead of its own shape when given).
  const Val* Get(int id, std::string* why, const std::vector<long long>* as_shape = nullptr) {
    if (auto it = vals_.find(id); it != vals_.end()) return &it->second;
    const GraphValue& v = g_.Value(id);
    const bool before =
        v.source == "op" && v.node >= 0 && static_cast<std::size_t>(v.node) < first_;
    if (v.source != "abi" && !before) {
      *why = fmt::format("value {} ({}) is made outside any op the generator knows", id, v.dtype);
      return nullptr;
    }
    if (!Supported(v.dtype)) {
      *why = fmt::format(
          "input value {} is {}; the generator handles float32, bfloat16 and float16", id, v.dtype);
      return nullptr;
    }
    int index = v.abi_index;
    if (region_) {
      auto it = std::find(inputs_.begin(), inputs_.end(), id);
      index = static_cast<int>(it - inputs_.begin());
      if (it == inputs_.end()) inputs_.push_back(id);
    } else if (before) {
      *why = fmt::format("value {} comes from before the fused ops", id);
      return nullptr;
    }
    const Val* r = AddLeaf(id, index, as_shape ? *as_shape : v.shape, v.dtype, why);
    if (r && as_shape && *as_shape != v.shape) p_.leaves.back().src = v.shape;
    return r;
  }

  /// The last leaf added, as a row value of `id`: one read per row, at
  /// broadcast index `at` ("row": into the rows' shape; "base": the row's
  /// first element of F).
  const Val* RowLeaf(int id, const std::string& dtype, const std::string& at) {
    Val val;
    val.kind = Kind::kRow;
    val.leaf = static_cast<int>(p_.leaves.size()) - 1;
    val.name = p_.NewName("r");
    val.dtype = dtype;
    Define(Kind::kRow, val.name,
           fmt::format("kopt_f(__ldg(a.p{0} + kopt_bidx(a.b{0}, {1})))", val.leaf, at), {});
    return &(vals_[id] = val);
  }

  /// F without its reduced dim: the shape of one value per row.
  std::vector<long long> RowsShape() const {
    std::vector<long long> r = p_.F;
    r.erase(r.begin() + RDim());
    return r;
  }

  const Val* AddLeaf(int id, int abi, const std::vector<long long>& shape, const std::string& dtype,
                     std::string* why) {
    if (!BroadcastsTo(shape, p_.F) && reduces_ && !Column() && !shape.empty() &&
        BroadcastsTo(shape, RowsShape())) {
      // Met only beside per-row values (torch aligned it against them): a
      // row value, read at the row's index into the rows' shape.
      Leaf l;
      l.abi = abi;
      l.shape = shape;
      l.dtype = dtype;
      l.lead = true;
      p_.leaves.push_back(l);
      return RowLeaf(id, dtype, "row");
    }
    if (!BroadcastsTo(shape, p_.F)) {
      *why = fmt::format("input {} of shape [{}] does not broadcast to [{}]", abi,
                         fmt::join(shape, ","), fmt::join(p_.F, ","));
      return nullptr;
    }
    Leaf l;
    l.abi = abi;
    l.shape = shape;
    l.dtype = dtype;
    l.full = Numel(shape) == Numel(p_.F);
    l.col =
        !l.full && !shape.empty() && shape.back() == Cols() && Numel(shape) == Cols() && Cols() > 1;
    p_.leaves.push_back(l);
    if (reduces_ && !Column() && !l.full && !l.col && Cols() > 1 &&
        (shape.empty() || shape.back() == 1)) {
      // Constant along each row (a per-channel bias [C, 1, 1] beside a mean
      // over H and W): a row value, read once per row at the row's first
      // element, so it can meet the row's statistics before any element op.
      return RowLeaf(id, dtype, "base");
    }
    Val val;
    val.kind = Kind::kElem;
    val.leaf = static_cast<int>(p_.leaves.size()) - 1;
    val.name = fmt::format("x{}", val.leaf);
    val.dtype = dtype;
    return &(vals_[id] = val);
  }

  /// A row value's shape must line up with F's rows: [..., 1] (keepdim) or
  /// [...] (F without its last dim).
  bool RowShaped(const std::vector<long long>& s) const {
    if (Numel(s) != Rows()) return false;
    if (s.empty()) return Rows() == 1;
    std::vector<long long> keep = p_.F;  // F without the reduced dim
    keep.erase(keep.begin() + RDim());
    std::vector<long long> k1 = p_.F;  // F with it kept as 1
    k1[static_cast<std::size_t>(RDim())] = 1;
    auto strip = [](std::vector<long long> v) {
      while (!v.empty() && v.front() == 1) v.erase(v.begin());
      return v;
    };
    return strip(s) == strip(keep) || strip(s) == strip(k1);
  }

  void Define(Kind scope, const std::string& name, const std::string& expr,
              std::vector<std::string> deps, const std::string& type = "float") {
    p_.defs.push_back({scope, name, type, expr, std::move(deps)});
  }

  /// `name` of a new value with the given scope, recorded for `id`.
  Val& NewVal(int id, Kind kind, const std::string& dtype = "float32") {
    Val v;
    v.kind = kind;
    v.name = p_.NewName("v");
    v.dtype = dtype;
    return vals_[id] = v;
  }

  /// Operand `i` of node `n`: a C expression (a tensor's variable or a
  /// number), its kind (numbers are row-uniform), and its dependency.
  struct Operand {
    std::string expr;
    std::optional<Kind> kind;  ///< nullopt: a literal
    std::string dep;
  };
  std::optional<Operand> Op(const GraphNode& n, std::size_t i, const char* kw, std::string* why,
                            std::optional<double> fallback = std::nullopt) {
    const Json* a = OpGraph::Arg(n, i, kw);
    if (!a || a->is_null()) {
      if (fallback) return Operand{FloatLiteral(*fallback), std::nullopt, ""};
      *why = fmt::format("{} lacks argument {}", n.op, i);
      return std::nullopt;
    }
    if (a->is_object() && a->contains("v")) {
      const Val* v = Get(a->at("v").get<int>(), why);
      if (!v) return std::nullopt;
      if (!Supported(v->dtype)) {
        *why = fmt::format("{} reads an {} value", n.op, v->dtype);
        return std::nullopt;
      }
      return Operand{v->name, v->kind, v->name};
    }
    if (a->is_number()) return Operand{FloatLiteral(a->get<double>()), std::nullopt, ""};
    if (a->is_boolean()) return Operand{a->get<bool>() ? "1.0f" : "0.0f", std::nullopt, ""};
    if (a->is_string() && (*a == "inf" || *a == "-inf" || *a == "nan"))
      return Operand{*a == "inf"    ? "INFINITY"
                     : *a == "-inf" ? "(-INFINITY)"
                                    : "NAN",
                     std::nullopt, ""};
    *why = fmt::format("{} has an argument the generator cannot read: {}", n.op, a->dump());
    return std::nullopt;
  }

  static double NumArg(const GraphNode& n, std::size_t i, const char* kw, double fallback) {
    const Json* a = OpGraph::Arg(n, i, kw);
    return a && a->is_number() ? a->get<double>() : fallback;
  }

  bool Node(const GraphNode& n, std::string* why) {
    if (n.out.empty()) {
      *why = n.op + " returns no tensor";
      return false;
    }
    if (kViewOps.count(n.base)) return View(n, why);
    if (n.base == "_to_copy" || n.base == "to") {
      const GraphValue& o = g_.Value(n.out[0]);
      if (!Supported(o.dtype) || n.in.empty()) {
        *why = n.op + " converts to " + o.dtype;
        return false;
      }
      const Val* v = Get(n.in[0], why);
      if (!v) return false;
      // Widening is exact (the kernel holds every value as a float), and so
      // is a conversion to the same type; narrowing to 16 bits rounds.
      if (o.dtype == "float32" || o.dtype == v->dtype) return View(n, why);
      if (g_.Value(n.in[0]).Numel() != o.Numel()) {
        *why = n.op + " changes the element count";
        return false;
      }
      const Val src = *v;
      Val& nv = NewVal(o.id, src.kind, o.dtype);
      Define(src.kind, nv.name, Rounded(o.dtype, src.name), {src.name});
      return true;
    }
    if (IsRowReduction(n.base)) return Reduction(n, why);
    return Elementwise(n, why);
  }

  bool View(const GraphNode& n, std::string* why) {
    if (n.in.empty()) {
      *why = n.op + " views nothing";
      return false;
    }
    const GraphValue& in = g_.Value(n.in[0]);
    const GraphValue& out = g_.Value(n.out[0]);
    // An input that broadcasts only as viewed (a vector v.view(N, 1) scaling
    // rows): its leaf takes the view's shape, for this view alone.
    if (n.base != "expand" && !vals_.count(in.id) && in.Numel() == out.Numel() &&
        !BroadcastsTo(in.shape, p_.F) && BroadcastsTo(out.shape, p_.F)) {
      const Val* v = Get(in.id, why, &out.shape);
      if (!v) return false;
      vals_[out.id] = *v;
      vals_.erase(in.id);
      return true;
    }
    const Val* v = Get(n.in[0], why);
    if (!v) return false;
    if (v->leaf >= 0 && !p_.leaves[static_cast<std::size_t>(v->leaf)].full && n.base != "expand") {
      // A re-shaped broadcast input (bias.view(1, C, 1, 1)): the same memory
      // with the new shape decides how it broadcasts.
      if (n.base == "clone" || n.base == "contiguous" || n.base == "detach" || n.base == "alias" ||
          n.base == "lift_fresh" || n.base == "_to_copy" || n.base == "to") {
        vals_[out.id] = *v;
        return true;
      }
      const Leaf& from = p_.leaves[static_cast<std::size_t>(v->leaf)];
      const std::vector<long long> src = from.src.empty() ? from.shape : from.src;
      if (!AddLeaf(out.id, from.abi, out.shape, from.dtype, why)) return false;
      if (src != out.shape) p_.leaves.back().src = src;
      return true;
    }
    if (n.base == "expand" && v->leaf >= 0) {
      vals_[out.id] = *v;  // broadcasting is right-aligned against F either way
      return true;
    }
    if (in.Numel() != out.Numel()) {
      *why = fmt::format("{} changes the element count ({} -> {})", n.op, in.Numel(), out.Numel());
      return false;
    }
    if (v->kind == Kind::kRow && !RowShaped(out.shape)) {
      *why = n.op + " moves a per-row value off its rows";
      return false;
    }
    vals_[out.id] = *v;
    return true;
  }

  bool Elementwise(const GraphNode& n, std::string* why) {
    const GraphValue& out = g_.Value(n.out[0]);
    if (!Supported(out.dtype)) {
      *why = fmt::format("{} makes {} values; the generator handles float32, bfloat16 and float16",
                         n.op, out.dtype);
      return false;
    }
    std::vector<Operand> ops;
    ops.reserve(8);  // op() hands out pointers into it
    auto op = [&](std::size_t i, const char* kw = nullptr,
                  std::optional<double> fallback = std::nullopt) -> const Operand* {
      auto o = Op(n, i, kw, why, fallback);
      if (!o) return nullptr;
      ops.push_back(*o);
      return &ops.back();
    };
    const std::string& b = n.base;
    std::string e;
    auto unary = [&](const std::string& fmtstr) -> bool {
      const Operand* x = op(0);
      if (!x) return false;
      e = fmt::format(fmt::runtime(fmtstr), x->expr);
      return true;
    };
    static const std::map<std::string, std::string> kUnary = {
        {"relu", "kopt_relu({})"},
        {"sigmoid", "kopt_sigmoid({})"},
        {"silu", "kopt_silu({})"},
        {"tanh", "tanhf({})"},
        {"exp", "expf({})"},
        {"exp2", "exp2f({})"},
        {"expm1", "expm1f({})"},
        {"log", "logf({})"},
        {"log2", "log2f({})"},
        {"log10", "log10f({})"},
        {"log1p", "log1pf({})"},
        {"sqrt", "sqrtf({})"},
        {"rsqrt", "rsqrtf({})"},
        {"abs", "fabsf({})"},
        {"neg", "(-({}))"},
        {"reciprocal", "(1.0f / ({}))"},
        {"sin", "sinf({})"},
        {"cos", "cosf({})"},
        {"erf", "erff({})"},
        {"erfc", "erfcf({})"},
        {"square", "kopt_sq({})"},
        {"mish", "kopt_mish({})"},
        {"hardswish", "kopt_hardswish({})"},
        {"hardsigmoid", "kopt_hardsigmoid({})"},
        {"logsigmoid", "(-kopt_softplus(-({}), 1.0f, 20.0f))"},
        {"relu6", "kopt_clamp({}, 0.0f, 6.0f)"},
        {"tanhshrink", "kopt_tanhshrink({})"},
    };
    bool ok = true;
    if (auto it = kUnary.find(b); it != kUnary.end()) {
      ok = unary(it->second);
    } else if (b == "gelu") {
      const Json* a = OpGraph::Arg(n, 1, "approximate");
      const bool tanh = a && a->is_string() && *a == "tanh";
      ok = unary(tanh ? "kopt_gelu_tanh({})" : "kopt_gelu({})");
    } else if (b == "add" || b == "sub" || b == "rsub") {
      const Operand* x = op(0);
      const Operand* y = x ? op(1) : nullptr;
      if (!y) return false;
      const double alpha = NumArg(n, 2, "alpha", 1.0);
      const std::string ya =
          alpha == 1.0 ? y->expr : fmt::format("({} * {})", FloatLiteral(alpha), y->expr);
      if (b == "add") e = fmt::format("({} + {})", x->expr, ya);
      if (b == "sub") e = fmt::format("({} - {})", x->expr, ya);
      if (b == "rsub")
        e = fmt::format(
            "({} - {})", y->expr,
            alpha == 1.0 ? x->expr : fmt::format("({} * {})", FloatLiteral(alpha), x->expr));
    } else if (b == "xlogy") {
      const Operand* x = op(0, "self");
      const Operand* y = x ? op(1, "other") : nullptr;
      if (!y) return false;
      e = fmt::format("kopt_xlogy({}, {})", x->expr, y->expr);
    } else if (b == "mul" || b == "div" || b == "maximum" || b == "minimum" || b == "fmax" ||
               b == "fmin") {
      if (b == "div") {
        const Json* rm = OpGraph::Arg(n, 2, "rounding_mode");
        if (rm && !rm->is_null()) {
          *why = n.op + " with rounding_mode " + rm->dump();
          return false;
        }
      }
      const Operand* x = op(0);
      const Operand* y = x ? op(1) : nullptr;
      if (!y) return false;
      if (b == "mul") e = fmt::format("({} * {})", x->expr, y->expr);
      if (b == "div") e = fmt::format("({} / {})", x->expr, y->expr);
      if (b == "maximum") e = fmt::format("kopt_max({}, {})", x->expr, y->expr);
      if (b == "minimum") e = fmt::format("kopt_min({}, {})", x->expr, y->expr);
      if (b == "fmax") e = fmt::format("fmaxf({}, {})", x->expr, y->expr);
      if (b == "fmin") e = fmt::format("fminf({}, {})", x->expr, y->expr);
    } else if (b == "pow") {
      const Operand* x = op(0);
      const Operand* y = x ? op(1) : nullptr;
      if (!y) return false;
      const Json* ea = OpGraph::Arg(n, 1, "exponent");
      if (ea && ea->is_number() && ea->get<double>() == 2.0)
        e = fmt::format("kopt_sq({})", x->expr);
      else if (ea && ea->is_number() && ea->get<double>() == 3.0)
        e = fmt::format("({0} * {0} * {0})", x->expr);
      else if (ea && ea->is_number() && ea->get<double>() == 0.5)
        e = fmt::format("sqrtf({})", x->expr);
      else if (ea && ea->is_number() && ea->get<double>() == 1.0)
        e = x->expr;
      else
        e = fmt::format("powf({}, {})", x->expr, y->expr);
    } else if (b == "clamp" || b == "clip" || b == "hardtanh" || b == "clamp_min" ||
               b == "clamp_max") {
      const Operand* x = op(0);
      if (!x) return false;
      std::string lo = "(-INFINITY)", hi = "INFINITY";
      auto bound = [&](std::size_t i, const char* kw, std::string* dst, double dflt,
                       bool has_dflt) -> bool {
        const Json* a = OpGraph::Arg(n, i, kw);
        if (a && a->is_number()) {
          *dst = FloatLiteral(a->get<double>());
        } else if (a && a->is_object()) {
          const Operand* t = op(i, kw);
          if (!t) return false;
          *dst = t->expr;
        } else if (has_dflt) {
          *dst = FloatLiteral(dflt);
        }
        return true;
      };
      if (b == "hardtanh") {
        if (!bound(1, "min_val", &lo, -1.0, true) || !bound(2, "max_val", &hi, 1.0, true))
          return false;
      } else if (b == "clamp_min") {
        if (!bound(1, "min", &lo, 0, false)) return false;
      } else if (b == "clamp_max") {
        if (!bound(1, "max", &hi, 0, false)) return false;
      } else if (!bound(1, "min", &lo, 0, false) || !bound(2, "max", &hi, 0, false)) {
        return false;
      }
      e = fmt::format("kopt_clamp({}, {}, {})", x->expr, lo, hi);
    } else if (b == "mse_loss" || b == "l1_loss" || b == "smooth_l1_loss" || b == "huber_loss") {
      // Per element (reduction "none"); a mean or sum over everything is
      // FuseTotal's rewrite into this and a total reduction.
      if (NumArg(n, 2, "reduction", 1) != 0) {
        *why = n.op + " reduces over every element (reduction mean or sum)";
        return false;
      }
      const Operand* x = op(0);
      const Operand* y = x ? op(1) : nullptr;
      if (!y) return false;
      const std::string d = fmt::format("({} - {})", x->expr, y->expr);
      const std::string ad = fmt::format("fabsf{}", d);
      if (b == "mse_loss") e = fmt::format("kopt_sq{}", d);
      if (b == "l1_loss") e = ad;
      if (b == "smooth_l1_loss") {
        const double beta = NumArg(n, 3, "beta", 1.0);
        e = beta == 0 ? ad
                      : fmt::format("({0} < {1} ? 0.5f * {0} * {0} / {1} : {0} - 0.5f * {1})", ad,
                                    FloatLiteral(beta));
      }
      if (b == "huber_loss") {
        const double delta = NumArg(n, 3, "delta", 1.0);
        e = fmt::format("({0} < {1} ? 0.5f * {0} * {0} : {1} * ({0} - 0.5f * {1}))", ad,
                        FloatLiteral(delta));
      }
    } else if (b == "leaky_relu") {
      const Operand* x = op(0);
      if (!x) return false;
      e = fmt::format("kopt_leaky({}, {})", x->expr,
                      FloatLiteral(NumArg(n, 1, "negative_slope", 0.01)));
    } else if (b == "elu") {
      const Operand* x = op(0);
      if (!x) return false;
      e = fmt::format("kopt_elu({}, {}, {}, {})", x->expr, FloatLiteral(NumArg(n, 1, "alpha", 1.0)),
                      FloatLiteral(NumArg(n, 2, "scale", 1.0)),
                      FloatLiteral(NumArg(n, 3, "input_scale", 1.0)));
    } else if (b == "softplus") {
      const Operand* x = op(0);
      if (!x) return false;
      e = fmt::format("kopt_softplus({}, {}, {})", x->expr, FloatLiteral(NumArg(n, 1, "beta", 1.0)),
                      FloatLiteral(NumArg(n, 2, "threshold", 20.0)));
    } else if (b == "threshold") {
      const Operand* x = op(0);
      if (!x) return false;
      e = fmt::format("kopt_threshold({}, {}, {})", x->expr,
                      FloatLiteral(NumArg(n, 1, "threshold", 0)),
                      FloatLiteral(NumArg(n, 2, "value", 0)));
    } else if (b == "lerp") {
      const Operand* x = op(0);
      const Operand* y = x ? op(1) : nullptr;
      const Operand* w = y ? op(2, "weight") : nullptr;
      if (!w) return false;
      e = fmt::format("({0} + {2} * ({1} - {0}))", x->expr, y->expr, w->expr);
    } else if (b == "addcmul" || b == "addcdiv") {
      const Operand* x = op(0);
      const Operand* y = x ? op(1) : nullptr;
      const Operand* z = y ? op(2) : nullptr;
      if (!z) return false;
      e = fmt::format("({} + {} * ({} {} {}))", x->expr, FloatLiteral(NumArg(n, 3, "value", 1.0)),
                      y->expr, b == "addcmul" ? "*" : "/", z->expr);
    } else {
      *why = n.op + " is not an op the fusion generator knows";
      return false;
    }
    if (!ok) return false;
    Kind kind = Kind::kRow;
    std::vector<std::string> deps;
    for (const Operand& o : ops) {
      if (o.kind == Kind::kElem) kind = Kind::kElem;
      if (!o.dep.empty()) deps.push_back(o.dep);
    }
    if (deps.empty()) {
      *why = n.op + " reads no tensor";
      return false;
    }
    if (kind == Kind::kElem) {
      if (out.Numel() != Numel(p_.F)) {
        *why = fmt::format("{} makes [{}], not the iteration shape [{}]", n.op,
                           fmt::join(out.shape, ","), fmt::join(p_.F, ","));
        return false;
      }
      for (const Operand& o : ops)
        if (o.kind == Kind::kRow && !RowValueBroadcastsAlongRows(n, o)) {
          *why = n.op + " broadcasts a per-row value across something other than its row";
          return false;
        }
    } else if (!RowShaped(out.shape)) {
      *why = n.op + " makes a per-row value of an unexpected shape";
      return false;
    }
    Val& v = NewVal(out.id, kind, out.dtype);
    Define(kind, v.name, Rounded(out.dtype, e), deps);
    return true;
  }

  /// A per-row operand of an element op must be [..., 1] shaped (keepdim).
  bool RowValueBroadcastsAlongRows(const GraphNode& n, const Operand& o) const {
    for (std::size_t i = 0; i < n.in.size(); ++i) {
      auto it = vals_.find(n.in[i]);
      if (it == vals_.end() || it->second.name != o.expr) continue;
      const auto& s = g_.Value(n.in[i]).shape;
      if (Column())  // keepdim over the reduced dim
        return s.size() == p_.F.size() && s[static_cast<std::size_t>(RDim())] == 1;
      return !s.empty() && s.back() == 1 && (p_.F.back() != 1 || s.size() == p_.F.size());
    }
    return false;
  }

  /// The row reduction of node `n` over F's last dim.
  bool Reduction(const GraphNode& n, std::string* why) {
    const std::string& b = n.base;
    if (n.in.empty()) {
      *why = n.op + " has no input";
      return false;
    }
    const GraphValue& xin = g_.Value(n.in[0]);
    const Val* x = Get(n.in[0], why);
    if (!x) return false;
    if (x->kind != Kind::kElem || xin.Numel() != Numel(p_.F) || xin.shape.empty() ||
        xin.shape.back() != Cols() || (Column() && xin.shape != p_.F)) {
      *why = n.op + " reduces something other than the rows of [" +
             fmt::format("{}", fmt::join(p_.F, ",")) + "]";
      return false;
    }
    const int rank = static_cast<int>(xin.shape.size());
    if (b == "linalg_vector_norm" || b == "norm") {
      const double ord = NumArg(n, 1, b == "norm" ? "p" : "ord", 2.0);
      if (ord != 2.0) {
        *why = n.op + " with ord " + FloatLiteral(ord);
        return false;
      }
    }
    const std::optional<int> dim = ReductionDim(n, xin.shape);
    if (!dim || *dim != RDim()) {
      *why = !dim ? n.op + " reduces several dims (or all of them)"
                  : fmt::format("{} reduces dim {} where the first reduction reduced dim {}", n.op,
                                *dim, RDim());
      return false;
    }
    (void)rank;
    const std::string cols = "(float)cols";
    auto stat = [&](const std::string& op, const std::string& input) {
      Stat s;
      s.name = p_.NewName("s");
      s.op = op;
      s.input = input;
      p_.stats.push_back(s);
      return s.name;
    };
    auto elem = [&](const std::string& expr, std::vector<std::string> deps) {
      const std::string name = p_.NewName("e");
      Define(Kind::kElem, name, expr, std::move(deps));
      return name;
    };
    auto row = [&](const std::string& expr, std::vector<std::string> deps) {
      const std::string name = p_.NewName("r");
      Define(Kind::kRow, name, expr, std::move(deps));
      return name;
    };
    auto set_out = [&](std::size_t k, const std::string& name, Kind kind,
                       const std::string& dtype = "float32") {
      if (k >= n.out.size()) return;
      Val v;
      v.kind = kind;
      v.name = name;
      v.dtype = dtype;
      // A 16-bit result (softmax of bfloat16 rows) is computed in float and
      // rounded once, as PyTorch's kernels do.
      const std::string& gd = g_.Value(n.out[k]).dtype;
      if (dtype != "int64" && gd != "float32" && Supported(gd)) {
        v.name =
            kind == Kind::kRow ? row(Rounded(gd, name), {name}) : elem(Rounded(gd, name), {name});
        v.dtype = gd;
      }
      vals_[n.out[k]] = v;
    };
    auto check_row_outputs = [&](std::initializer_list<std::size_t> ks) -> bool {
      for (std::size_t k : ks)
        if (k < n.out.size() && !RowShaped(g_.Value(n.out[k]).shape)) {
          *why = n.op + " makes a per-row value of an unexpected shape";
          return false;
        }
      return true;
    };
    const std::string xv = x->name;
    // Mean then the sum of squared deviations: exact like torch's, at the
    // cost of a second pass over the row (from L1/L2).
    auto variance = [&](double correction, std::string* mean_out) {
      const std::string sum = stat("sum", xv);
      const std::string mean = row(fmt::format("{} / {}", sum, cols), {sum});
      const std::string dev = elem(fmt::format("kopt_sq({} - {})", xv, mean), {xv, mean});
      const std::string ss = stat("sum", dev);
      *mean_out = mean;
      return row(fmt::format("{} / fmaxf({} - {}, 0.0f)", ss, cols, FloatLiteral(correction)),
                 {ss});
    };
    if (b == "sum" || b == "mean") {
      if (!check_row_outputs({0})) return false;
      const std::string s = stat("sum", xv);
      set_out(0, b == "sum" ? s : row(fmt::format("{} / {}", s, cols), {s}), Kind::kRow);
    } else if (b == "amax" || b == "amin") {
      if (!check_row_outputs({0})) return false;
      set_out(0, stat(b == "amax" ? "max" : "min", xv), Kind::kRow);
    } else if (b == "max" || b == "min" || b == "argmax" || b == "argmin") {
      if (!check_row_outputs({0, 1})) return false;
      const bool is_max = b == "max" || b == "argmax";
      const std::string s = stat(is_max ? "argmax" : "argmin", xv);
      if (b == "argmax" || b == "argmin") {
        set_out(0, s, Kind::kRow, "int64");
      } else {
        set_out(0, s + "_v", Kind::kRow);
        set_out(1, s, Kind::kRow, "int64");
      }
    } else if (b == "var" || b == "std" || b == "var_mean" || b == "std_mean") {
      if (!check_row_outputs({0, 1})) return false;
      double correction = 1.0;
      if (const Json* c = OpGraph::Arg(n, 99, "correction"); c && c->is_number())
        correction = c->get<double>();
      if (const Json* u = OpGraph::Arg(n, 2, "unbiased"); u && u->is_boolean())
        correction = u->get<bool>() ? 1 : 0;
      std::string mean;
      const std::string var = variance(correction, &mean);
      const bool is_std = b == "std" || b == "std_mean";
      set_out(0, is_std ? row(fmt::format("sqrtf({})", var), {var}) : var, Kind::kRow);
      if (b == "var_mean" || b == "std_mean") set_out(1, mean, Kind::kRow);
    } else if (b == "logsumexp") {
      if (!check_row_outputs({0})) return false;
      const std::string s =
          stat("online", xv);  // the max (s_m) and the sum of exp(x - max) in one pass
      const std::string m = s + "_m";
      set_out(0, row(fmt::format("kopt_lse({}, {})", m, s), {m, s}), Kind::kRow);
    } else if (b == "linalg_vector_norm" || b == "norm") {
      if (!check_row_outputs({0})) return false;
      const std::string sq = elem(fmt::format("kopt_sq({})", xv), {xv});
      const std::string s = stat("sum", sq);
      set_out(0, row(fmt::format("sqrtf({})", s), {s}), Kind::kRow);
    } else if (b == "_softmax" || b == "softmax" || b == "_log_softmax" || b == "log_softmax") {
      const std::string s =
          stat("online", xv);  // the max (s_m) and the sum of exp(x - max) in one pass
      const std::string m = s + "_m";
      const std::string ex = elem(fmt::format("kopt_exp_shift({}, {})", xv, m), {xv, m});
      const bool log = b == "_log_softmax" || b == "log_softmax";
      if (log) {
        const std::string lse = row(fmt::format("kopt_lse({}, {})", m, s), {m, s});
        set_out(0, elem(fmt::format("({} - {})", xv, lse), {xv, lse}), Kind::kElem);
      } else {
        const std::string inv = row(fmt::format("1.0f / {}", s), {s});
        set_out(0, elem(fmt::format("({} * {})", ex, inv), {ex, inv}), Kind::kElem);
      }
    } else if (b == "native_layer_norm") {
      if (!check_row_outputs({1, 2})) return false;
      std::string mean;
      const std::string var = variance(0.0, &mean);
      const double eps = NumArg(n, 4, "eps", 1e-5);
      const std::string rstd = row(fmt::format("rsqrtf({} + {})", var, FloatLiteral(eps)), {var});
      std::string y = elem(fmt::format("(({} - {}) * {})", xv, mean, rstd), {xv, mean, rstd});
      for (std::size_t k : {2, 3}) {  // weight, bias
        const Json* a = OpGraph::Arg(n, k);
        if (!a || a->is_null()) continue;
        auto o = Op(n, k, nullptr, why);
        if (!o) return false;
        y = elem(fmt::format(fmt::runtime(k == 2 ? "({} * {})" : "({} + {})"), y, o->expr),
                 {y, o->dep});
      }
      set_out(0, y, Kind::kElem);
      set_out(1, mean, Kind::kRow);
      set_out(2, rstd, Kind::kRow);
    } else {
      *why = n.op + " is a reduction the generator does not know";
      return false;
    }
    return true;
  }

  bool Outputs(std::string* why) {
    for (std::size_t k = 0; k < outputs_.size(); ++k) {
      const int id = outputs_[k];
      auto it = vals_.find(id);
      if (it == vals_.end()) {
        *why = fmt::format("output {} is not computed by the fused ops", k);
        return false;
      }
      const Val& v = it->second;
      if (v.leaf >= 0) {
        *why = fmt::format("output {} is an input returned unchanged", k);
        return false;
      }
      const GraphValue& gv = g_.Value(id);
      if (v.kind == Kind::kElem && gv.Numel() != Numel(p_.F)) {
        *why =
            fmt::format("output {} has [{}], not the iteration shape", k, fmt::join(gv.shape, ","));
        return false;
      }
      if (v.kind == Kind::kRow && gv.Numel() != Rows()) {
        *why =
            fmt::format("output {} has [{}], not one value per row", k, fmt::join(gv.shape, ","));
        return false;
      }
      if (gv.dtype != "int64" && !Supported(gv.dtype)) {
        *why = fmt::format("output {} is {}", k, gv.dtype);
        return false;
      }
      const std::string mem = v.dtype == "int64" ? "long long" : CType(gv.dtype);
      p_.outputs.push_back(
          {static_cast<int>(k), v.name, v.kind, mem, mem == "long long" ? "long long" : "float"});
    }
    if (p_.outputs.empty()) {
      *why = "the forward returns nothing";
      return false;
    }
    return true;
  }

  // ---- emission ----------------------------------------------------------

  /// Element-scope defs needed for `targets`, in order, plus the leaves they read.
  void Closure(const std::vector<std::string>& targets, std::vector<const Def*>* defs,
               std::set<int>* leaves) const {
    std::set<std::string> need(targets.begin(), targets.end());
    // Walk the defs backwards: a def is needed when a needed name reads it.
    for (auto it = p_.defs.rbegin(); it != p_.defs.rend(); ++it) {
      if (it->scope != Kind::kElem || !need.count(it->name)) continue;
      for (const std::string& d : it->deps) need.insert(d);
    }
    for (const Def& d : p_.defs)
      if (d.scope == Kind::kElem && need.count(d.name)) defs->push_back(&d);
    for (std::size_t l = 0; l < p_.leaves.size(); ++l)
      if (need.count(fmt::format("x{}", l))) leaves->insert(static_cast<int>(l));
  }

  /// Row-scope names a set of element defs reads (stats and row defs).
  std::set<std::string> RowDeps(const std::vector<const Def*>& defs,
                                const std::vector<std::string>& extra) const {
    std::set<std::string> out;
    std::set<std::string> row_names;
    for (const Def& d : p_.defs)
      if (d.scope == Kind::kRow) row_names.insert(d.name);
    for (const Stat& s : p_.stats) {
      row_names.insert(s.name);
      row_names.insert(s.name + "_v");
      row_names.insert(s.name + "_m");
    }
    for (const Def* d : defs)
      for (const std::string& dep : d->deps)
        if (row_names.count(dep)) out.insert(dep);
    for (const std::string& e : extra)
      if (row_names.count(e)) out.insert(e);
    return out;
  }

  /// The loop body over VEC consecutive elements starting at linear index i0.
  /// `cached`: the row kernel's register cache (C<l>[it], one VEC-wide step
  /// per loop step `it`); a full-size input in `loaded` is read from it, any
  /// other is loaded from memory into it.
  /// `row`: the row kernel's body, where a leaf indexed by the column
  /// (a weight along the row) is read VEC at a time like the row itself
  /// (the launcher adds it to the vector path's alignment check).
  std::string Body(const std::vector<const Def*>& defs, const std::set<int>& leaves,
                   const std::string& per_element, const std::string& col_index,
                   bool cached = false, std::set<int>* loaded = nullptr, bool row = false) const {
    std::string s;
    for (int l : leaves) {
      const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
      if (row && leaf.col && !leaf.full && cached)
        s += fmt::format("    const float* W{0} = WC{0}[it];\n", l);
      else if (row && leaf.col && !leaf.full)
        s += fmt::format("    float W{0}[VEC];\n    kopt_load<VEC>(a.p{0}, i0 - base, W{0});\n", l);
      if (!leaf.full) continue;
      if (!cached) {
        s += fmt::format("    float L{0}[VEC];\n    kopt_load<VEC>(a.p{0}, i0, L{0});\n", l);
      } else {
        if (!loaded->count(l)) s += fmt::format("    kopt_load<VEC>(a.p{0}, i0, C{0}[it]);\n", l);
        s += fmt::format("    const float* L{0} = C{0}[it];\n", l);
      }
    }
    s += "#pragma unroll\n    for (int u = 0; u < VEC; ++u) {\n      const int64_t i = i0 + u;\n";
    s += "      (void)i;\n";
    for (int l : leaves) {
      const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
      if (leaf.full)
        s += fmt::format("      const float x{0} = L{0}[u];\n", l);
      else if (leaf.col && row)
        s += fmt::format("      const float x{0} = W{0}[u];\n", l);
      else if (leaf.col)
        s += fmt::format("      const float x{0} = kopt_f(__ldg(a.p{0} + {1}));\n", l, col_index);
      else
        s += fmt::format("      const float x{0} = kopt_f(__ldg(a.p{0} + kopt_bidx(a.b{0}, i)));\n",
                         l);
    }
    for (const Def* d : defs)
      s += fmt::format("      const {} {} = {};\n", d->type, d->name, d->expr);
    s += per_element;
    s += "    }\n";
    return s;
  }

  std::string Stores(Kind kind) const {
    std::string s;
    for (const Output& o : p_.outputs)
      if (o.kind == kind && kind == Kind::kElem)
        s += fmt::format("      O{0}[u] = {1};\n", o.abi, o.name);
    return s;
  }

  std::vector<std::string> ElemOutputNames() const {
    std::vector<std::string> v;
    for (const Output& o : p_.outputs)
      if (o.kind == Kind::kElem) v.push_back(o.name);
    return v;
  }

  FusedKernel Emit() {
    // Passes: a stat's pass is one more than the latest pass any row value
    // its input reads comes from.
    std::map<std::string, int> ready;  // row name -> pass after which it is known
    std::function<int(const std::string&)> row_pass = [&](const std::string& name) -> int {
      if (auto it = ready.find(name); it != ready.end()) return it->second;
      return 0;
    };
    for (Stat& s : p_.stats) {
      std::vector<const Def*> defs;
      std::set<int> leaves;
      Closure({s.input}, &defs, &leaves);
      int pass = 0;
      for (const std::string& r : RowDeps(defs, {s.input})) pass = std::max(pass, row_pass(r));
      s.pass = pass;
      ready[s.name] = pass + 1;
      ready[s.name + "_v"] = pass + 1;
      ready[s.name + "_m"] = pass + 1;
      for (const Def& d : p_.defs) {
        if (d.scope != Kind::kRow || ready.count(d.name)) continue;
        int after = 0;
        bool known = true;
        for (const std::string& dep : d.deps) {
          if (!ready.count(dep)) {
            known = false;
            break;
          }
          after = std::max(after, ready[dep]);
        }
        if (known) ready[d.name] = after;
      }
    }
    const bool row_kernel = !p_.stats.empty();
    FusedKernel k;
    k.kind = !row_kernel ? "elementwise" : Column() ? "column" : "row";
    k.ops = p_.ops;
    int passes = 0;
    for (const Stat& s : p_.stats) passes = std::max(passes, s.pass + 1);
    k.passes = passes + 1;
    if (row_kernel && Column()) {
      k.lines = Rows();
      k.split = ColumnSplit(passes);
    }
    k.source = !row_kernel ? EmitElementwise() : Column() ? EmitColumn(passes) : EmitRow(passes);
    std::vector<std::string> short_ops;
    for (const std::string& op : p_.ops) {
      const std::string b = OpBase(op);
      if (!kViewOps.count(b) && (short_ops.empty() || short_ops.back() != b))
        short_ops.push_back(b);
    }
    k.about =
        row_kernel && Column()
            ? fmt::format(
                  "{} thread(s) per line of {} along dim {} compute {} in {} pass(es) over it",
                  k.split, RowLen(), RDim(), fmt::join(short_ops, " -> "), k.passes)
        : row_kernel
            ? fmt::format(
                  "one block per row of {} computes {} in {} pass(es) over the row, one DRAM read",
                  Cols(), fmt::join(short_ops, " -> "), k.passes)
            : fmt::format("one vectorized pass computes {}", fmt::join(short_ops, " -> "));
    return k;
  }

  std::string Header(const std::string& what, bool cl = false) const {
    std::string s = fmt::format(
        "// Generated by kopt's fusion generator (src/plan/fusion.cc): {}.\n"
        "// Iteration shape at capture: [{}]; any shape with the same broadcasting works.\n",
        what, fmt::join(p_.F, ", "));
    s += kPrelude;
    s += "struct Args {\n";
    for (std::size_t l = 0; l < p_.leaves.size(); ++l) {
      s += fmt::format("  const {}* __restrict__ p{};\n", CType(p_.leaves[l].dtype), l);
      if (!p_.leaves[l].full && !p_.leaves[l].col) s += fmt::format("  KoptBcast b{};\n", l);
      if (cl && !p_.leaves[l].full && !p_.leaves[l].col)
        s += fmt::format("  int bk{};  // 1: one value per channel, 2: per image and channel\n", l);
    }
    s += "  int64_t cols;\n";
    s += "  bool cv;  // cols % VEC == 0: an aligned step stays in one row\n";
    if (cl)
      s += "  unsigned clmask;  // full inputs stored NHWC (bit per input)\n"
           "  bool cl_vec;      // those read as float4 along C\n"
           "  int64_t C, HW;\n";
    for (const Output& o : p_.outputs) s += fmt::format("  {}* __restrict__ o{};\n", o.type, o.abi);
    s += "};\n\n";
    return s;
  }

  /// kopt_forward: checks, the broadcast tables, the launch.
  /// The tensor leaf `l`'s broadcast is computed from: in[abi], or, for a
  /// broadcast input read viewed, V<l> defined into `s`: the runtime
  /// tensor's dims with the view's inserted 1s (so a second shape of the
  /// task still broadcasts), or the captured view's shape when the view
  /// does more than insert 1s (the element count is checked).
  std::string ViewedAs(const Leaf& leaf, std::size_t l, std::string* s) const {
    const std::string t = fmt::format("in[{}]", leaf.abi);
    if (leaf.full || leaf.col || leaf.src.empty() || leaf.src == leaf.shape) return t;
    std::vector<int> from(leaf.shape.size(), -1);  // view dim -> src dim, -1: an inserted 1
    std::size_t j = 0;
    bool inserts = true;
    for (std::size_t i = 0; i < leaf.shape.size() && inserts; ++i) {
      while (j < leaf.src.size() && leaf.src[j] == 1 && leaf.shape[i] != 1) ++j;  // squeezed
      if (j < leaf.src.size() && leaf.shape[i] == leaf.src[j])
        from[i] = static_cast<int>(j++);
      else if (leaf.shape[i] != 1)
        inserts = false;
    }
    while (j < leaf.src.size() && leaf.src[j] == 1) ++j;
    inserts = inserts && j == leaf.src.size();
    const std::string v = fmt::format("V{}", l);
    *s += fmt::format("  kopt_tensor {0} = {1};  // {1} as the graph views it\n  {0}.ndim = {2};\n",
                      v, t, leaf.shape.size());
    if (inserts) {
      *s += fmt::format("  if ({}.ndim != {}) return 4;\n", t, leaf.src.size());
      for (std::size_t i = 0; i < leaf.shape.size(); ++i)
        *s += from[i] >= 0 ? fmt::format("  {}.shape[{}] = {}.shape[{}];\n", v, i, t, from[i])
                           : fmt::format("  {}.shape[{}] = 1;\n", v, i);
    } else {
      *s += fmt::format("  if (kopt_numel({}) != {}LL) return 4;\n", t, Numel(leaf.shape));
      for (std::size_t i = 0; i < leaf.shape.size(); ++i)
        *s += fmt::format("  {}.shape[{}] = {}LL;\n", v, i, leaf.shape[i]);
    }
    return v;
  }

  std::string Forward(const std::string& launch,
                      const std::string& rows = "cols > 0 ? n / cols : 0", bool cl = false) const {
    int max_abi = -1;
    for (const Leaf& l : p_.leaves) max_abi = std::max(max_abi, l.abi);
    std::string s =
        "extern \"C\" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int "
        "n_out,\n"
        "                            kopt_stream stream) {\n";
    s += fmt::format("  if (n_in < {} || n_out != {}) return 1;\n", max_abi + 1, p_.outputs.size());
    // The iteration shape: a full-size input, else an element output.
    std::string shape_src;
    for (const Leaf& l : p_.leaves)
      if (l.full) {
        shape_src = fmt::format("in[{}]", l.abi);
        break;
      }
    if (shape_src.empty())
      for (const Output& o : p_.outputs)
        if (o.kind == Kind::kElem) {
          shape_src = fmt::format("out[{}]", o.abi);
          break;
        }
    if (shape_src.empty()) shape_src = "in[0]";
    s += fmt::format("  const kopt_tensor& F = {};\n", shape_src);
    s += "  if (F.ndim < 1) return 2;\n";
    if (trail_ > 1)
      s += fmt::format(
          "  // The reduction spans F's last {0} dims: one row is their product.\n"
          "  if (F.ndim < {0}) return 2;\n"
          "  const int64_t n = kopt_numel(F);\n  int64_t cols = 1;\n"
          "  for (int d = F.ndim - {0}; d < F.ndim; ++d) cols *= F.shape[d];\n",
          trail_);
    else
      s += "  const int64_t n = kopt_numel(F);\n  const int64_t cols = F.shape[F.ndim - 1];\n";
    s += "  const int64_t rows = " + rows + ";\n  (void)rows;\n";
    s += "  Args a;\n  a.cols = cols;\n  a.cv = false;\n";
    if (cl) s += "  a.clmask = 0;\n  a.cl_vec = false;\n  a.C = a.HW = 0;\n";
    for (std::size_t l = 0; l < p_.leaves.size(); ++l) {
      const Leaf& leaf = p_.leaves[l];
      if (cl && leaf.full)
        // A full-size input may also come NHWC-dense (a channels-last
        // convolution's output): the transposing kernel reads it.
        s += fmt::format(
            "  if (in[{0}].dtype != {2}) return 3;\n"
            "  if (kopt_cl_dense(in[{0}], F)) a.clmask |= 1u << {1};\n"
            "  else if (!kopt_is_contiguous(in[{0}])) return 3;\n"
            "  a.p{1} = static_cast<const {3}*>(in[{0}].data);\n",
            leaf.abi, l, AbiDtype(CType(leaf.dtype)), CType(leaf.dtype));
      else
        s += fmt::format(
            "  if (in[{0}].dtype != {2} || !kopt_is_contiguous(in[{0}])) return 3;\n"
            "  a.p{1} = static_cast<const {3}*>(in[{0}].data);\n",
            leaf.abi, l, AbiDtype(CType(leaf.dtype)), CType(leaf.dtype));
      // A broadcast input the graph reads viewed (bias.view(C, 1, 1),
      // v.view(N, 1)) broadcasts with the view's shape: V<l>.
      const std::string viewed = ViewedAs(leaf, l, &s);
      if (leaf.full)
        s += fmt::format("  if (kopt_numel(in[{}]) != n) return 4;\n", leaf.abi);
      else if (leaf.lead)
        s += fmt::format(
            "  {{\n    // The rows' shape: F without its last {1} dim(s).\n"
            "    kopt_tensor R = F;\n    R.ndim = F.ndim - {1};\n"
            "    if (R.ndim < 0 || !kopt_make_bcast({0}, R, &a.b{2})) return 4;\n  }}\n",
            viewed, trail_, l);
      else if (leaf.col && trail_ > 1)
        s += fmt::format(
            "  if (kopt_numel(in[{0}]) != cols || in[{0}].ndim < {1}) return 4;\n"
            "  for (int d = 1; d <= {1}; ++d)\n"
            "    if (in[{0}].shape[in[{0}].ndim - d] != F.shape[F.ndim - d]) return 4;\n",
            leaf.abi, trail_);
      else if (leaf.col)
        s += fmt::format(
            "  if (kopt_numel(in[{0}]) != cols || in[{0}].shape[in[{0}].ndim - 1] != cols) return "
            "4;\n",
            leaf.abi);
      else
        s += fmt::format("  if (!kopt_make_bcast({}, F, &a.b{})) return 4;\n", viewed, l);
    }
    for (const Output& o : p_.outputs) {
      s += fmt::format("  if (out[{0}].dtype != {1} || !kopt_is_contiguous(out[{0}])) return 5;\n",
                       o.abi, AbiDtype(o.type));
      s += fmt::format("  if (kopt_numel(out[{}]) != {}) return 6;\n", o.abi,
                       o.kind == Kind::kElem ? "n" : "rows");
      s += fmt::format("  a.o{0} = static_cast<{1}*>(out[{0}].data);\n", o.abi, o.type);
    }
    s += "  if (n == 0) return 0;\n";
    s += "  cudaStream_t st = (cudaStream_t)stream;\n";
    // The vector path needs every full-size pointer 16-byte aligned and the
    // element count (the row length, for row kernels) a multiple of VEC.
    s += "  uintptr_t align = 0;\n";
    for (std::size_t l = 0; l < p_.leaves.size(); ++l)
      if (p_.leaves[l].full || (RowKernel() && p_.leaves[l].col))
        s += fmt::format("  align |= reinterpret_cast<uintptr_t>(a.p{});\n", l);
    for (const Output& o : p_.outputs)
      if (o.kind == Kind::kElem)
        s += fmt::format("  align |= reinterpret_cast<uintptr_t>(a.o{});\n", o.abi);
    s += launch;
    s += "  return (int)cudaGetLastError();\n}\n";
    return s;
  }

  std::string EmitElementwise() const {
    std::vector<const Def*> defs;
    std::set<int> leaves;
    const auto outs = ElemOutputNames();
    Closure(outs, &defs, &leaves);
    // A 4-D iteration shape with a full-size input: the kernel also takes
    // NHWC inputs (a channels-last convolution's output) and writes NCHW.
    int full = 0;
    for (const Leaf& l : p_.leaves) full += l.full ? 1 : 0;
    const bool cl = p_.F.size() == 4 && full > 0;
    std::string s = Header("one elementwise pass", cl);
    s += "// kopt:knob THREADS 256 64..1024*2 threads per block: fewer, larger blocks or more, "
         "smaller ones\n"
         "constexpr int THREADS = 256;\n"
         "// kopt:knob VEC 4 {1,2,4} consecutive elements per thread per step (4 = 16-byte loads)\n"
         "constexpr int VEC = 4;\n"
         "// kopt:knob ILP 1 {1,2,4} steps each thread keeps in flight: more bytes in flight, "
         "fewer blocks\n"
         "constexpr int ILP = 1;\n"
         "// kopt:constraint THREADS % 32 == 0\n\n";
    // The scalar helper for the tail (VEC = 1 semantics).
    std::string one = "__device__ __forceinline__ void fused_one(const Args& a, int64_t i) {\n";
    for (int l : leaves) {
      const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
      one += leaf.full ? fmt::format("  const float x{0} = kopt_f(a.p{0}[i]);\n", l)
             : leaf.col
                 ? fmt::format("  const float x{0} = kopt_f(__ldg(a.p{0} + i % a.cols));\n", l)
                 : fmt::format(
                       "  const float x{0} = kopt_f(__ldg(a.p{0} + kopt_bidx(a.b{0}, i)));\n", l);
    }
    for (const Def* d : defs)
      one += fmt::format("  const {} {} = {};\n", d->type, d->name, d->expr);
    for (const Output& o : p_.outputs)
      one += fmt::format("  kopt_put(a.o{}, i, {});\n", o.abi, o.name);
    one += "}\n\n";
    s += one;
    s += ElementwiseKernel(defs, leaves);
    std::string launch;
    if (cl) {
      s += TransposingKernel(defs, leaves);
      bool all_f32 = true;
      for (const Leaf& l : p_.leaves) all_f32 = all_f32 && (!l.full || l.dtype == "float32");
      // A broadcast input with one value per channel (a bias [C, 1, 1]) or
      // per image and channel is indexed from the tile's channel: no
      // integer division per element.
      std::string kinds;
      for (std::size_t l = 0; l < p_.leaves.size(); ++l)
        if (!p_.leaves[l].full && !p_.leaves[l].col)
          kinds += fmt::format(
              "    a.bk{0} = a.b{0}.n == 1 && a.b{0}.div[0] == a.HW && a.b{0}.mul[0] == 1\n"
              "                ? (a.b{0}.mod[0] == a.C ? 1 : a.b{0}.mod[0] == a.C * F.shape[0] ? 2 "
              ": 0)\n"
              "                : 0;\n",
              l);
      launch += fmt::format(
          "  if (a.clmask) {{\n"
          "    // NHWC inputs: 32 x 32 (channels x positions) tiles through shared\n"
          "    // memory, the outputs written in NCHW order.\n"
          "    if (F.ndim != 4) return 2;\n"
          "    a.C = F.shape[1];\n    a.HW = F.shape[2] * F.shape[3];\n"
          "    a.cl_vec = {} && a.C % 4 == 0 && (align % 16) == 0;\n"
          "{}"
          "    const int64_t tiles = (a.HW + 31) / 32;\n"
          "    if (tiles * F.shape[0] > 0x7fffffffLL || (a.C + 31) / 32 > 65535) return 7;\n"
          "    fused_cl_kernel<<<dim3((unsigned)(tiles * F.shape[0]), (unsigned)((a.C + 31) / "
          "32)), 256, 0, st>>>(a, tiles);\n"
          "    return (int)cudaGetLastError();\n"
          "  }}\n",
          all_f32 ? "true" : "false", kinds);
    }
    launch +=
        "  const bool vec = VEC > 1 && (align % (sizeof(float) * VEC)) == 0;\n"
        "  const int W = vec ? VEC : 1;\n"
        "  a.cv = cols % W == 0;\n";
    for (int l : leaves) {
      const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
      if (!leaf.full && !leaf.col)
        launch += fmt::format("  a.b{0}.vc = kopt_bcast_vec_const(a.b{0}, W);\n", l);
    }
    launch +=
        "  const int64_t per_block = (int64_t)THREADS * ILP * W;\n"
        "  const int64_t blocks = (n + per_block - 1) / per_block;\n"
        "  if (blocks > 0x7fffffffLL) return 7;\n"
        "  const bool i32 = n + per_block <= 0x7fffffffLL;\n"
        "  if (vec && i32)\n"
        "    fused_kernel<VEC, true><<<(unsigned)blocks, THREADS, 0, st>>>(a, n);\n"
        "  else if (vec)\n"
        "    fused_kernel<VEC, false><<<(unsigned)blocks, THREADS, 0, st>>>(a, n);\n"
        "  else if (i32)\n"
        "    fused_kernel<1, true><<<(unsigned)blocks, THREADS, 0, st>>>(a, n);\n"
        "  else\n"
        "    fused_kernel<1, false><<<(unsigned)blocks, THREADS, 0, st>>>(a, n);\n";
    s += Forward(launch, "cols > 0 ? n / cols : 0", cl);
    return s;
  }

  /// The elementwise kernel for NHWC-dense full inputs (bit l of a.clmask)
  /// beside NCHW ones, writing NCHW outputs: a block takes 32 channels x 32
  /// positions of one image, reads each NHWC input's tile along C (float4
  /// when a.cl_vec) into shared memory, then computes each element at its
  /// NCHW index, so a warp writes 32 consecutive positions. Broadcast and
  /// NCHW inputs are read at that index as in the plain kernel.
  std::string TransposingKernel(const std::vector<const Def*>& defs,
                                const std::set<int>& leaves) const {
    std::map<int, int> tile;  // full leaf -> its shared-memory tile
    for (int l : leaves)
      if (p_.leaves[static_cast<std::size_t>(l)].full)
        tile.emplace(l, static_cast<int>(tile.size()));
    std::string s = fmt::format(
        "static inline bool kopt_cl_dense(const kopt_tensor& t, const kopt_tensor& F) {{\n"
        "  // [N, C, H, W] of F's shape stored as NHWC, and not also NCHW-contiguous.\n"
        "  if (t.ndim != 4 || F.ndim != 4 || kopt_is_contiguous(t)) return false;\n"
        "  for (int d = 0; d < 4; ++d)\n"
        "    if (t.shape[d] != F.shape[d]) return false;\n"
        "  const int64_t C = t.shape[1], W = t.shape[3], H = t.shape[2];\n"
        "  return (C == 1 || t.strides[1] == 1) && (W == 1 || t.strides[3] == C) &&\n"
        "         (H == 1 || t.strides[2] == W * C) && (t.shape[0] == 1 || t.strides[0] == H * W * "
        "C);\n"
        "}}\n\n"
        "__global__ void __launch_bounds__(256) fused_cl_kernel(Args a, int64_t tiles) {{\n"
        "  __shared__ float S[{}][32][33];\n"
        "  const int t = threadIdx.x;\n"
        "  const int64_t img = blockIdx.x / tiles;\n"
        "  const int64_t p0 = (int64_t)(blockIdx.x % tiles) * 32, c0 = (int64_t)blockIdx.y * 32;\n"
        "  const int64_t C = a.C, HW = a.HW;\n",
        std::max<std::size_t>(tile.size(), 1));
    for (const auto& [l, f] : tile) {
      s += fmt::format(
          "  if (a.clmask & (1u << {0})) {{\n"
          "    const auto* src = a.p{0} + img * HW * C;\n"
          "    if (a.cl_vec) {{\n"
          "      const int p = t >> 3, c = (t & 7) * 4;\n"
          "      if (p0 + p < HW && c0 + c < C) {{\n"
          "        const float4 q = *reinterpret_cast<const float4*>(src + (p0 + p) * C + c0 + "
          "c);\n"
          "        S[{1}][c][p] = q.x; S[{1}][c + 1][p] = q.y; S[{1}][c + 2][p] = q.z; "
          "S[{1}][c + 3][p] = q.w;\n"
          "      }}\n"
          "    }} else {{\n"
          "#pragma unroll\n"
          "      for (int k = 0; k < 4; ++k) {{\n"
          "        const int p = (t >> 5) + 8 * k, c = t & 31;\n"
          "        if (p0 + p < HW && c0 + c < C) S[{1}][c][p] = kopt_f(src[(p0 + p) * C + c0 + "
          "c]);\n"
          "      }}\n"
          "    }}\n"
          "  }}\n",
          l, f);
    }
    s += "  __syncthreads();\n#pragma unroll\n  for (int k = 0; k < 4; ++k) {\n";
    s += "    const int c = (t >> 5) + 8 * k, p = t & 31;\n";
    s += "    if (c0 + c >= C || p0 + p >= HW) continue;\n";
    s += "    const int64_t i = (img * C + c0 + c) * HW + p0 + p;\n";
    for (int l : leaves) {
      const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
      if (leaf.full)
        s += fmt::format(
            "    const float x{0} = (a.clmask & (1u << {0})) ? S[{1}][c][p] : kopt_f(a.p{0}[i]);\n",
            l, tile.at(l));
      else if (leaf.col)  // i % W is the position's column
        s += fmt::format(
            "    const float x{0} = kopt_f(__ldg(a.p{0} + (uint32_t)(p0 + p) % "
            "(uint32_t)a.cols));\n",
            l);
      else
        s += fmt::format(
            "    const float x{0} = kopt_f(__ldg(a.p{0} + (a.bk{0} == 1   ? c0 + c\n"
            "                                             : a.bk{0} == 2 ? img * C + c0 + c\n"
            "                                                           : kopt_bidx(a.b{0}, "
            "i))));\n",
            l);
    }
    for (const Def* d : defs)
      s += fmt::format("    const {} {} = {};\n", d->type, d->name, d->expr);
    for (const Output& o : p_.outputs)
      s += fmt::format("    kopt_put(a.o{}, i, {});\n", o.abi, o.name);
    s += "  }\n}\n\n";
    return s;
  }

  /// The elementwise kernel. A thread owns ILP steps of VEC consecutive
  /// elements, THREADS * VEC apart. When all of them are in range (every
  /// block but the last) it issues every load before the first store, so
  /// ILP * VEC loads per input are in flight; a broadcast input constant
  /// over an aligned step is read once per step, and a last-dim one indexed
  /// from the step's column; indices are 32-bit when they fit.
  std::string ElementwiseKernel(const std::vector<const Def*>& defs,
                                const std::set<int>& leaves) const {
    std::string s =
        "template <int VEC, bool I32>\n__global__ void __launch_bounds__(THREADS) "
        "fused_kernel(Args a, int64_t n) {\n";
    s += "  const int64_t start = ((int64_t)blockIdx.x * THREADS * ILP + threadIdx.x) * VEC;\n";
    s += "  if (start + ((int64_t)(ILP - 1) * THREADS + 1) * VEC <= n) {\n";
    bool any_bcast = false;
    for (int l : leaves) {
      const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
      if (leaf.full) s += fmt::format("    float L{}[ILP][VEC];\n", l);
      if (!leaf.full && !leaf.col) {
        s += fmt::format("    float G{}[ILP];\n", l);
        any_bcast = true;
      }
    }
    s += "#pragma unroll\n    for (int k = 0; k < ILP; ++k) {\n";
    s += "      const int64_t i0 = start + (int64_t)k * THREADS * VEC;\n      (void)i0;\n";
    for (int l : leaves) {
      const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
      if (leaf.full)
        s += fmt::format("      kopt_load<VEC>(a.p{0}, i0, L{0}[k]);\n", l);
      else if (!leaf.col)
        s += fmt::format(
            "      G{0}[k] = a.b{0}.vc ? kopt_f(__ldg(a.p{0} + kopt_bidx_t<I32>(a.b{0}, i0))) : "
            "0.0f;\n",
            l);
    }
    (void)any_bcast;
    s += "    }\n";
    s += "#pragma unroll\n    for (int k = 0; k < ILP; ++k) {\n";
    s += "      const int64_t i0 = start + (int64_t)k * THREADS * VEC;\n";
    s += "      const int64_t c0 = kopt_mod_t<I32>(i0, a.cols);\n      (void)c0;\n";
    for (const Output& o : p_.outputs) s += fmt::format("      {} O{}[VEC];\n", o.reg, o.abi);
    s += "#pragma unroll\n      for (int u = 0; u < VEC; ++u) {\n";
    s += "        const int64_t i = i0 + u;\n        (void)i;\n";
    for (int l : leaves) {
      const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
      if (leaf.full)
        s += fmt::format("        const float x{0} = L{0}[k][u];\n", l);
      else if (leaf.col)
        s += fmt::format(
            "        const float x{0} = kopt_f(__ldg(a.p{0} + (a.cv ? c0 + u : kopt_mod_t<I32>(i, "
            "a.cols))));\n",
            l);
      else
        s += fmt::format(
            "        const float x{0} = a.b{0}.vc ? G{0}[k] : kopt_f(__ldg(a.p{0} + "
            "kopt_bidx_t<I32>(a.b{0}, i)));\n",
            l);
    }
    for (const Def* d : defs)
      s += fmt::format("        const {} {} = {};\n", d->type, d->name, d->expr);
    for (const Output& o : p_.outputs)
      if (o.kind == Kind::kElem) s += fmt::format("        O{0}[u] = {1};\n", o.abi, o.name);
    s += "      }\n";
    for (const Output& o : p_.outputs)
      s += fmt::format("      kopt_store<VEC>(a.o{0}, i0, O{0});\n", o.abi);
    s += "    }\n    return;\n  }\n";
    // The last block: step by step, its tail one element at a time.
    s += "#pragma unroll\n  for (int k = 0; k < ILP; ++k) {\n";
    s += "    const int64_t i0 = start + (int64_t)k * THREADS * VEC;\n";
    s += "    if (i0 >= n) break;\n";
    s += "    if (VEC > 1 && i0 + VEC > n) {  // the tail, one element at a time\n";
    s += "      for (int64_t i = i0; i < n; ++i) fused_one(a, i);\n      break;\n    }\n";
    for (const Output& o : p_.outputs) s += fmt::format("    {} O{}[VEC];\n", o.reg, o.abi);
    s += Body(defs, leaves, Stores(Kind::kElem), "i % a.cols");
    for (const Output& o : p_.outputs)
      s += fmt::format("    kopt_store<VEC>(a.o{0}, i0, O{0});\n", o.abi);
    s += "  }\n}\n\n";
    return s;
  }

  /// One loop over the row's VEC-wide steps: unrolled over the register
  /// cache, or strided over the row.
  static std::string LoopOpen(bool cached) {
    if (cached)
      return "#pragma unroll\n  for (int it = 0; it < (CI > 0 ? CI : 1); ++it) {\n"
             "    const int64_t i0 = base + ((int64_t)it * LANES + tid) * VEC;\n"
             "    if (i0 >= base + cols) break;\n";
    return "  for (int64_t i0 = base + (int64_t)tid * VEC; i0 < base + cols; i0 += (int64_t)LANES "
           "* VEC) {\n";
  }
  static std::string LoopClose(bool) { return "  }\n"; }

  /// The cached row kernel's loads of the full inputs `leaves` not yet in
  /// registers, all issued before any is used: each guarded by its own
  /// `if`, so they are predicated and in flight together. Loading inside
  /// the compute loop, after its `break`, made the compiler wait for each
  /// step's load before issuing the next (a load cannot move above a
  /// branch that may leave the loop): the generated softmax over rows of
  /// 16384 (8 steps, 2 blocks per SM) ran at 0.88x eager on an H100 where
  /// the same tiling, hand-written, ran at 1.18x.
  std::string Preload(const std::set<int>& leaves, std::set<int>* loaded) const {
    std::string loads;
    for (int l : leaves) {
      const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
      if (leaf.full && !loaded->count(l)) {
        loads +=
            fmt::format("    if (i0 < base + cols) kopt_load<VEC>(a.p{0}, i0, C{0}[it]);\n", l);
        loaded->insert(l);
      }
      // An input along the row (a norm's weight), for this pass's loop: its
      // loads too are issued together, not one per step behind the loop's
      // break (the gated RMS norm ran at 0.87x compile on an H100).
      if (leaf.col && !leaf.full)
        loads += fmt::format(
            "    if (i0 < base + cols) kopt_load<VEC>(a.p{0}, i0 - base, WC{0}[it]);\n", l);
    }
    if (loads.empty()) return "";
    return "#pragma unroll\n  for (int it = 0; it < (CI > 0 ? CI : 1); ++it) {\n"
           "    const int64_t i0 = base + ((int64_t)it * LANES + tid) * VEC;\n" +
           loads + "  }\n";
  }

  /// The accumulator declarations of one reduction (row and column kernels).
  static std::string StatInit(const Stat& st) {
    if (st.op == "sum") return fmt::format("  float {}_acc = 0.0f;\n", st.name);
    if (st.op == "max") return fmt::format("  float {}_acc = -INFINITY;\n", st.name);
    if (st.op == "min") return fmt::format("  float {}_acc = INFINITY;\n", st.name);
    if (st.op == "argmax" || st.op == "argmin")
      return fmt::format("  float {0}_acc = {1};\n  long long {0}_idx = 0x7fffffffffffffffLL;\n",
                         st.name, st.op == "argmax" ? "-INFINITY" : "INFINITY");
    if (st.op == "online")
      return fmt::format("  float {0}_accm = -INFINITY;\n  float {0}_acc = 0.0f;\n", st.name);
    return "";
  }

  /// The row defs whose inputs are now `known` (or emitted), not yet emitted.
  std::string ReadyRowDefs(const std::set<std::string>& known,
                           std::set<std::string>* emitted) const {
    std::string out;
    for (const Def& d : p_.defs) {
      if (d.scope != Kind::kRow || emitted->count(d.name)) continue;
      bool ok = true;
      for (const std::string& dep : d.deps) ok = ok && (known.count(dep) || emitted->count(dep));
      if (!ok) continue;
      out += fmt::format("  const {} {} = {};\n", d.type, d.name, d.expr);
      emitted->insert(d.name);
    }
    return out;
  }

  /// The row kernel's passes, row values and stores, in one mode.
  std::string RowBody(int passes, bool cached) const {
    std::string s;
    std::set<int> loaded;
    // Cached: every row-sized input is loaded before the first pass, so an
    // input only a later pass reads (a gate) arrives while the first pass
    // reduces (loaded later, its latency followed the block reduction).
    if (cached) {
      std::set<int> full;
      for (std::size_t l = 0; l < p_.leaves.size(); ++l)
        if (p_.leaves[l].full) full.insert(static_cast<int>(l));
      s += Preload(full, &loaded);
    }
    std::set<std::string> emitted_rows;
    std::set<std::string> known;
    for (int pass = 0; pass < passes; ++pass) {
      std::vector<std::string> inputs;
      std::vector<const Stat*> stats;
      for (const Stat& st : p_.stats)
        if (st.pass == pass) {
          stats.push_back(&st);
          inputs.push_back(st.input);
        }
      std::vector<const Def*> defs;
      std::set<int> leaves;
      Closure(inputs, &defs, &leaves);
      for (const Stat* st : stats) s += StatInit(*st);
      std::string per;
      for (const Stat* st : stats) {
        if (st->op == "sum") per += fmt::format("      {}_acc += {};\n", st->name, st->input);
        if (st->op == "max")
          per += fmt::format("      {0}_acc = kopt_max({0}_acc, {1});\n", st->name, st->input);
        if (st->op == "min")
          per += fmt::format("      {0}_acc = kopt_min({0}_acc, {1});\n", st->name, st->input);
        if (st->op == "argmax" || st->op == "argmin")
          per += fmt::format("      kopt_arg_{2}({0}_acc, {0}_idx, {1}, i - base);\n", st->name,
                             st->input, st->op == "argmax" ? "max" : "min");
        // From registers, an online softmax statistic is two cheap passes:
        // the max, then the sum of exp(x - max), each exp independent,
        // instead of the online update's serial chain of branchy exps (the
        // cached logsumexp over rows of 5000: 0.3614 -> 0.2907 ms, H100).
        if (st->op == "online" && cached)
          per += fmt::format("      {0}_accm = kopt_max({0}_accm, {1});\n", st->name, st->input);
        else if (st->op == "online")
          per += fmt::format("      kopt_online({0}_accm, {0}_acc, {1});\n", st->name, st->input);
      }
      if (cached) s += Preload(leaves, &loaded);
      s += LoopOpen(cached);
      s += Body(defs, leaves, per, "(i - base)", cached, &loaded, true);
      s += LoopClose(cached);
      for (int l : leaves) loaded.insert(l);
      std::string terms;
      for (const Stat* st : stats)
        if (st->op == "online" && cached) {
          s += fmt::format("  {0}_accm = kopt_row_max({0}_accm, red);\n", st->name);
          terms += fmt::format("      {0}_acc += kopt_online_term({1}, {0}_accm);\n", st->name,
                               st->input);
        }
      if (!terms.empty()) {
        s += LoopOpen(cached);
        s += Body(defs, leaves, terms, "(i - base)", cached, &loaded, true);
        s += LoopClose(cached);
      }
      for (const Stat* st : stats) {
        if (st->op == "sum")
          s += fmt::format("  const float {0} = kopt_row_sum({0}_acc, red);\n", st->name);
        if (st->op == "max")
          s += fmt::format("  const float {0} = kopt_row_max({0}_acc, red);\n", st->name);
        if (st->op == "min")
          s += fmt::format("  const float {0} = kopt_row_min({0}_acc, red);\n", st->name);
        if (st->op == "argmax" || st->op == "argmin")
          s += fmt::format(
              "  kopt_row_arg<{1}>({0}_acc, {0}_idx, red, redi);\n  const float {0}_v = {0}_acc;\n"
              "  const long long {0} = {0}_idx;\n",
              st->name, st->op == "argmax" ? "true" : "false");
        if (st->op == "online" && cached)
          s += fmt::format(
              "  const float {0}_m = {0}_accm;\n  const float {0} = kopt_row_sum({0}_acc, red);\n",
              st->name);
        else if (st->op == "online")
          s += fmt::format(
              "  kopt_row_online({0}_accm, {0}_acc, red, red2);\n  const float {0}_m = {0}_accm;\n"
              "  const float {0} = {0}_acc;\n",
              st->name);
        known.insert(st->name);
        known.insert(st->name + "_v");
        known.insert(st->name + "_m");
      }
      s += ReadyRowDefs(known, &emitted_rows);
    }
    // The last pass: element outputs, then the row outputs (thread 0).
    const auto outs = ElemOutputNames();
    if (!outs.empty()) {
      std::vector<const Def*> defs;
      std::set<int> leaves;
      Closure(outs, &defs, &leaves);
      if (cached) s += Preload(leaves, &loaded);
      s += LoopOpen(cached);
      for (const Output& o : p_.outputs)
        if (o.kind == Kind::kElem) s += fmt::format("    {} O{}[VEC];\n", o.reg, o.abi);
      s += Body(defs, leaves, Stores(Kind::kElem), "(i - base)", cached, &loaded, true);
      for (const Output& o : p_.outputs)
        if (o.kind == Kind::kElem)
          s += fmt::format("    kopt_store<VEC>(a.o{0}, i0, O{0});\n", o.abi);
      s += LoopClose(cached);
    }
    std::string row_stores;
    for (const Output& o : p_.outputs)
      if (o.kind == Kind::kRow)
        row_stores += fmt::format("    kopt_put(a.o{}, row, {});\n", o.abi, o.name);
    if (!row_stores.empty()) s += "  if (tid == 0) {\n" + row_stores + "  }\n";
    return s;
  }

  /// Threads that share a line of the column kernel by default: enough
  /// threads in all to fill an H200's 132 SMs x 2048 (Little's law: a thread
  /// per line with few lines leaves DRAM's pipe half empty, e.g. 65536 lines
  /// of a softmax over dim 1 ran at 13% of its floor), each thread keeping at
  /// least 8 steps of its line. With more than one pass and a line short
  /// enough, as many as hold the line in at most 32 register steps each
  /// (ColumnCache).
  int ColumnSplit(int passes) const {
    const long long lines = Rows(), len = RowLen();
    int split = 1;
    while (split < 32 && lines * split < 256 * 1024 && len / (2 * split) >= 8) split *= 2;
    if (ColumnCacheable(passes))
      while (split < 32 && len > 32LL * split) split *= 2;
    return split;
  }

  /// Whether the column kernel's full-size inputs can stay in registers
  /// across its passes (one DRAM read instead of one per pass): more than
  /// one pass, a line of at most 32 x 32 elements, at most two full inputs.
  /// `passes`: the statistics' passes (the element outputs take one more).
  bool ColumnCacheable(int passes) const {
    int full = 0;
    for (const Leaf& l : p_.leaves) full += l.full ? 1 : 0;
    const int reads = passes + (ElemOutputNames().empty() ? 0 : 1);
    return reads > 1 && full >= 1 && full <= 2 && RowLen() <= 32LL * 32;
  }

  /// The column kernel: reductions along dim RDim() of F, not the last.
  /// SPLIT threads share one line (the elements at base + r * inner, r <
  /// rlen), thread ty taking r = ty, ty + SPLIT, ...; neighbouring threads
  /// own neighbouring lines, so every step of the loop is one coalesced read
  /// across a warp. The SPLIT partial statistics of a line meet in shared
  /// memory in a fixed order (the result does not depend on timing). Each
  /// pass reads the line again, unless the thread's steps fit CACHE_ITERS
  /// registers per full input: then the first pass keeps them and the
  /// later ones read registers (a softmax over dim 1 of [16, 1000, 4096]
  /// read its 262 MB twice and ran at 46% of its floor on an H100).
  std::string EmitColumn(int passes) const {
    std::string s = Header(fmt::format("SPLIT threads per line along dim {}", RDim()));
    const int split = ColumnSplit(passes);
    const bool cacheable = ColumnCacheable(passes);
    int ci = 0;
    if (cacheable) {
      ci = 1;
      while (static_cast<long long>(ci) * split < RowLen()) ci *= 2;
    }
    // 16 threads per SPLIT at least (the constraint), 512 with a cache (a
    // 1024-thread block caps registers at 64 per thread).
    int threads = 256;
    while (threads < 16 * split && threads < 1024) threads *= 2;
    if (ci > 0) threads = std::max(threads, 512);
    s += fmt::format(
        "// kopt:knob THREADS {0} 32..1024*2 threads per block\n"
        "constexpr int THREADS = {0};\n",
        threads);
    s += fmt::format(
        "// kopt:knob SPLIT {0} {{1,2,4,8,16,32}} threads sharing a line (their partial "
        "statistics meet in shared memory): more threads for few lines\n"
        "constexpr int SPLIT = {0};\n",
        split);
    s += "// kopt:knob UNROLL 4 {1,2,4,8} steps along the line each loop iteration unrolls: loads "
         "in flight\n"
         "constexpr int UNROLL = 4;\n";
    if (cacheable)
      s += fmt::format(
          "// kopt:knob CACHE_ITERS {0} {{0,4,8,16,32}} steps of its line each thread keeps in "
          "registers across the passes (one DRAM read, when the line fits SPLIT * CACHE_ITERS); "
          "0: every pass streams the line again\n"
          "constexpr int CACHE_ITERS = {0};\n",
          ci);
    else
      s += "constexpr int CACHE_ITERS = 0;\n";
    s += "// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024 && THREADS >= 16 * SPLIT\n\n";
    s += fmt::format("constexpr int RDIM = {};  // the reduced dim\nconstexpr int RANK = {};\n",
                     RDim(), p_.F.size());
    s += "constexpr int WARPS = THREADS / 32;\nconstexpr int ROW_WARPS = 0;\n"
         "constexpr int LPB = THREADS / SPLIT;  // lines per block\n\n";
    s += kBlockReduce;  // kopt_online, kopt_online_merge
    bool arg = false, online = false;
    for (const Stat& st : p_.stats) {
      arg = arg || st.op == "argmax" || st.op == "argmin";
      online = online || st.op == "online";
    }
    s += "template <int CI>\n__global__ void __launch_bounds__(THREADS) fused_col_kernel(Args a, "
         "int64_t lines, int64_t cols, int64_t inner) {\n";
    s += "  __shared__ float cs[SPLIT > 1 ? THREADS : 1];\n";
    if (online) s += "  __shared__ float cs2[SPLIT > 1 ? THREADS : 1];\n";
    if (arg) s += "  __shared__ long long ci[SPLIT > 1 ? THREADS : 1];\n";
    s += "  const int tx = threadIdx.x % LPB, ty = threadIdx.x / LPB;\n"
         "  const int64_t row = (int64_t)blockIdx.x * LPB + tx;\n"
         "  const bool live = row < lines;  // no early return: the block meets at barriers\n"
         "  const int64_t o = row / inner, j = row - o * inner;\n"
         "  const int64_t base = o * cols * inner + j;\n";
    s += "  if constexpr (CI > 0) {\n";
    for (std::size_t l = 0; l < p_.leaves.size(); ++l)
      if (p_.leaves[l].full) s += fmt::format("  float C{}[CI > 0 ? CI : 1];\n", l);
    s += ColumnBody(passes, true);
    s += "  } else {\n";
    s += ColumnBody(passes, false);
    s += "  }\n";
    s += "}\n\n";
    s += Forward(
        "  if (F.ndim != RANK) return 2;\n"
        "  int64_t inner = 1;\n"
        "  for (int d = RDIM + 1; d < RANK; ++d) inner *= F.shape[d];\n"
        "  const int64_t rlen = F.shape[RDIM];\n"
        "  const int64_t blocks = (rows + LPB - 1) / LPB;\n"
        "  if (blocks > 0x7fffffffLL) return 7;\n"
        "  (void)align;\n"
        "  // The register cache holds CACHE_ITERS steps of SPLIT elements of a line.\n"
        "  if (CACHE_ITERS > 0 && rlen <= (int64_t)SPLIT * CACHE_ITERS)\n"
        "    fused_col_kernel<CACHE_ITERS><<<(unsigned)blocks, THREADS, 0, st>>>(a, rows, rlen, "
        "inner);\n"
        "  else\n"
        "    fused_col_kernel<0><<<(unsigned)blocks, THREADS, 0, st>>>(a, rows, rlen, inner);\n",
        fmt::format("F.ndim == {0} && F.shape[{1}] > 0 ? n / F.shape[{1}] : 0", p_.F.size(),
                    RDim()));
    return s;
  }

  /// The column kernel's passes and stores; `cached`: the full inputs' steps
  /// are loaded once into the registers C<leaf>[CI] (fully unrolled, so
  /// they stay registers) and read from there in later passes.
  std::string ColumnBody(int passes, bool cached) const {
    std::string s;
    std::set<int> in_cache;  // full leaves already loaded into registers
    // One pass: loads, element defs and `per` for this thread's steps.
    auto pass_loop = [&](const std::vector<const Def*>& defs, const std::set<int>& leaves,
                         const std::string& per) {
      std::string b;
      // The cache's loads first, all in flight together (as the row
      // kernel's Preload: loads inside the compute loop waited one by one).
      std::string loads;
      for (int l : leaves)
        if (cached && p_.leaves[static_cast<std::size_t>(l)].full && !in_cache.count(l)) {
          loads += fmt::format(
              "    if (live && r < cols) C{0}[k] = kopt_f(a.p{0}[base + r * inner]);\n", l);
          in_cache.insert(l);
        }
      if (!loads.empty())
        b += "#pragma unroll\n  for (int k = 0; k < CI; ++k) {\n"
             "    const int64_t r = ty + (int64_t)k * SPLIT;\n" +
             loads + "  }\n";
      if (cached)
        b += "#pragma unroll\n  for (int k = 0; k < CI; ++k) {\n"
             "    const int64_t r = ty + (int64_t)k * SPLIT;\n"
             "    if (!live || r >= cols) continue;\n";
      else
        b += "#pragma unroll UNROLL\n  for (int64_t r = live ? ty : cols; r < cols; r += "
             "SPLIT) {\n";
      b += "    const int64_t i = base + r * inner;\n    (void)i;\n";
      std::set<int> loaded;
      for (int l : leaves) {
        const Leaf& leaf = p_.leaves[static_cast<std::size_t>(l)];
        if (leaf.full && cached && in_cache.count(l)) {
          b += fmt::format("    const float x{0} = C{0}[k];\n", l);
        } else if (leaf.full) {
          b += fmt::format("    const float x{0} = kopt_f(a.p{0}[i]);\n", l);
          if (cached) {
            b += fmt::format("    C{0}[k] = x{0};\n", l);
            loaded.insert(l);
          }
        } else if (leaf.col) {
          b += fmt::format("    const float x{0} = kopt_f(__ldg(a.p{0} + i % a.cols));\n", l);
        } else {
          b += fmt::format("    const float x{0} = kopt_f(__ldg(a.p{0} + kopt_bidx(a.b{0}, i)));\n",
                           l);
        }
      }
      in_cache.insert(loaded.begin(), loaded.end());
      for (const Def* d : defs)
        b += fmt::format("    const {} {} = {};\n", d->type, d->name, d->expr);
      b += per;
      b += "  }\n";
      return b;
    };
    // The SPLIT partials of one statistic, merged in ty order by every thread.
    auto merge = [](const Stat& st) {
      std::string m = "  if constexpr (SPLIT > 1) {\n";
      if (st.op == "online") {
        m += fmt::format(
            "    cs[threadIdx.x] = {0}_accm;\n    cs2[threadIdx.x] = {0}_acc;\n    "
            "__syncthreads();\n"
            "    {0}_accm = cs[tx];\n    {0}_acc = cs2[tx];\n"
            "    for (int k = 1; k < SPLIT; ++k) kopt_online_merge({0}_accm, {0}_acc, cs[k * LPB + "
            "tx], cs2[k * LPB + tx]);\n",
            st.name);
      } else if (st.op == "argmax" || st.op == "argmin") {
        m += fmt::format(
            "    cs[threadIdx.x] = {0}_acc;\n    ci[threadIdx.x] = {0}_idx;\n    __syncthreads();\n"
            "    {0}_acc = cs[tx];\n    {0}_idx = ci[tx];\n"
            "    for (int k = 1; k < SPLIT; ++k) kopt_arg_{1}({0}_acc, {0}_idx, cs[k * LPB + tx], "
            "ci[k * LPB + tx]);\n",
            st.name, st.op == "argmax" ? "max" : "min");
      } else {
        const std::string step = st.op == "sum"   ? "{0}_acc += cs[k * LPB + tx]"
                                 : st.op == "max" ? "{0}_acc = kopt_max({0}_acc, cs[k * LPB + tx])"
                                                  : "{0}_acc = kopt_min({0}_acc, cs[k * LPB + tx])";
        m += fmt::format(
            "    cs[threadIdx.x] = {0}_acc;\n    __syncthreads();\n    {0}_acc = cs[tx];\n",
            st.name);
        m += "    for (int k = 1; k < SPLIT; ++k) " + fmt::format(fmt::runtime(step), st.name) +
             ";\n";
      }
      m += "    __syncthreads();\n  }\n";
      return m;
    };
    std::set<std::string> emitted_rows, known;
    for (int pass = 0; pass < passes; ++pass) {
      std::vector<std::string> inputs;
      std::vector<const Stat*> stats;
      for (const Stat& st : p_.stats)
        if (st.pass == pass) {
          stats.push_back(&st);
          inputs.push_back(st.input);
        }
      std::vector<const Def*> defs;
      std::set<int> leaves;
      Closure(inputs, &defs, &leaves);
      std::string per;
      for (const Stat* st : stats) {
        s += StatInit(*st);
        if (st->op == "sum")
          per += fmt::format("    {}_acc += {};\n", st->name, st->input);
        else if (st->op == "max" || st->op == "min")
          per +=
              fmt::format("    {0}_acc = kopt_{2}({0}_acc, {1});\n", st->name, st->input, st->op);
        else if (st->op == "argmax" || st->op == "argmin")
          per += fmt::format("    kopt_arg_{2}({0}_acc, {0}_idx, {1}, r);\n", st->name, st->input,
                             st->op == "argmax" ? "max" : "min");
        else if (st->op == "online")
          per += fmt::format("    kopt_online({0}_accm, {0}_acc, {1});\n", st->name, st->input);
      }
      s += pass_loop(defs, leaves, per);
      for (const Stat* st : stats) {
        s += merge(*st);
        if (st->op == "argmax" || st->op == "argmin")
          s += fmt::format("  const float {0}_v = {0}_acc;\n  const long long {0} = {0}_idx;\n",
                           st->name);
        else if (st->op == "online")
          s += fmt::format("  const float {0}_m = {0}_accm;\n  const float {0} = {0}_acc;\n",
                           st->name);
        else
          s += fmt::format("  const float {0} = {0}_acc;\n", st->name);
        known.insert(st->name);
        known.insert(st->name + "_v");
        known.insert(st->name + "_m");
      }
      s += ReadyRowDefs(known, &emitted_rows);
    }
    const auto outs = ElemOutputNames();
    if (!outs.empty()) {
      std::vector<const Def*> defs;
      std::set<int> leaves;
      Closure(outs, &defs, &leaves);
      std::string per;
      for (const Output& o : p_.outputs)
        if (o.kind == Kind::kElem)
          per += fmt::format("    kopt_put(a.o{}, i, {});\n", o.abi, o.name);
      s += pass_loop(defs, leaves, per);
    }
    std::string row_stores;
    for (const Output& o : p_.outputs)
      if (o.kind == Kind::kRow)
        row_stores += fmt::format("    kopt_put(a.o{}, row, {});\n", o.abi, o.name);
    if (!row_stores.empty()) s += "  if (live && ty == 0) {\n" + row_stores + "  }\n";
    return s;
  }

  std::string EmitRow(int passes) const {
    std::string s = Header("a block per row");
    // Long rows get more threads, so the register cache stays at 32 floats
    // per thread: 256 threads caching 64 floats each (a 16384-float row)
    // left too few warps per SM, and the generated softmax ran at 0.76x
    // eager on the H200 where a hand-written 512 x 32 ran at 1.26x.
    long long threads = 256;
    while (threads < 1024 && threads * 32 < Cols()) threads *= 2;
    s += fmt::format(
        "// kopt:knob THREADS {0} 32..1024*2 threads per block: more warps to hide latency vs "
        "more to synchronize\n"
        "constexpr int THREADS = {0};\n"
        "// kopt:knob VEC 4 {{1,2,4}} consecutive elements per thread per step (4 = 16-byte "
        "loads)\n"
        "constexpr int VEC = 4;\n",
        threads);
    s += fmt::format(
        "// kopt:knob ROW_WARPS {} {{0,1}} 1: a warp per row, THREADS/32 rows per block (short "
        "rows); 0: the block per row\n"
        "constexpr int ROW_WARPS = {};\n",
        Cols() <= 2048 ? 1 : 0, Cols() <= 2048 ? 1 : 0);
    s += "// kopt:constraint THREADS % 32 == 0 && THREADS <= 1024\n";
    s += "constexpr int WARPS = THREADS / 32;\n"
         "constexpr int ROWS_PER_BLOCK = ROW_WARPS ? WARPS : 1;\n"
         "constexpr int LANES = ROW_WARPS ? 32 : THREADS;  // threads that share a row\n";
    {
      // The register cache: a knob whether to keep the row, and as many
      // steps as the planned row needs at the chosen THREADS and VEC (a
      // fixed step count left most of the tuner's configurations streaming
      // the row again, where they could not hold it). At most 128 cached
      // floats per thread; the cached floats barely depend on VEC (a smaller
      // VEC never leaves the allowed space), so diagnosis moves of VEC stay.
      // Registers per step: the row-sized inputs, and the inputs along the
      // row (a weight), whose steps are loaded together before each loop.
      int full = 0, held = 0;
      for (const Leaf& l : p_.leaves) {
        full += l.full ? 1 : 0;
        held += l.full || l.col ? 1 : 0;
      }
      const long long lanes = Cols() <= 2048 ? 32 : threads;
      const long long need = (Cols() + lanes * 4 - 1) / (lanes * 4);
      if (full == 0) {
        s += "constexpr int CACHE_ITERS = 0;  // no input the size of the row to keep\n\n";
      } else {
        const bool fits = need <= 16 && need * 4 * held <= 128;
        s += fmt::format(
            "// kopt:knob CACHE {0} {{0,1}} 1: each thread keeps its steps of the row in "
            "registers across the passes (one DRAM read), as many as the row needs; 0: every "
            "pass streams the row again\n"
            "constexpr int CACHE = {0};\n"
            "constexpr int64_t PLANNED_COLS = {1};  // the row length the kernel was made for\n"
            "constexpr int CACHE_ITERS =\n"
            "    CACHE ? (int)((PLANNED_COLS + (int64_t)LANES * VEC - 1) / ((int64_t)LANES * VEC)) "
            ": 0;\n"
            "// kopt:constraint CACHE == 0 || ({1} + (ROW_WARPS * 32 + (1 - ROW_WARPS) * THREADS) "
            "* VEC - 1) / ((ROW_WARPS * 32 + (1 - ROW_WARPS) * THREADS) * VEC) * VEC * {2} <= "
            "128\n\n",
            fits ? 1 : 0, Cols(), held);
      }
    }
    s += kBlockReduce;
    s += "template <int VEC, int CI>\n__global__ void __launch_bounds__(THREADS) "
         "fused_row_kernel(Args a, int64_t rows, "
         "int64_t cols) {\n";
    s += "  __shared__ float red[WARPS];\n  __shared__ float red2[WARPS];\n  __shared__ long long "
         "redi[WARPS];\n"
         "  (void)red2;\n  (void)redi;\n";
    s += "  const int64_t row = (int64_t)blockIdx.x * ROWS_PER_BLOCK + (ROW_WARPS ? threadIdx.x / "
         "32 : 0);\n"
         "  const int tid = ROW_WARPS ? (threadIdx.x & 31) : threadIdx.x;\n"
         "  if (ROW_WARPS && row >= rows) return;  // a warp per row syncs only itself\n"
         "  const int64_t base = row * cols;\n";
    // The kernel body twice: rows held in registers across the passes
    // (CI > 0: the row fits in CI steps of LANES * VEC), or streamed again
    // from L1/L2 in every pass.
    int full_leaves = 0;
    for (const Leaf& l : p_.leaves) full_leaves += l.full ? 1 : 0;
    s += "  if constexpr (CI > 0) {\n";
    for (std::size_t l = 0; l < p_.leaves.size(); ++l)
      if (p_.leaves[l].full)
        s += fmt::format("  float C{}[CI > 0 ? CI : 1][VEC];\n", l);
      else if (p_.leaves[l].col)
        s += fmt::format("  float WC{}[CI > 0 ? CI : 1][VEC];\n", l);
    s += RowBody(passes, true);
    s += "  } else {\n";
    s += RowBody(passes, false);
    s += "  }\n";
    (void)full_leaves;
    s += "}\n\n";
    s += Forward(
        "  const bool vec = VEC > 1 && (align % (sizeof(float) * VEC)) == 0 && cols % VEC == 0;\n"
        "  const int64_t blocks = (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;\n"
        "  if (blocks > 0x7fffffffLL) return 7;\n"
        "  // The register cache holds CACHE_ITERS * VEC elements per thread: steps\n"
        "  // of LANES * VEC, or of LANES single elements when unaligned.\n"
        "  const bool cache = CACHE_ITERS > 0 && cols <= (int64_t)LANES * VEC * CACHE_ITERS;\n"
        "  if (vec && cache)\n"
        "    fused_row_kernel<VEC, CACHE_ITERS><<<(unsigned)blocks, THREADS, 0, st>>>(a, rows, "
        "cols);\n"
        "  else if (vec)\n"
        "    fused_row_kernel<VEC, 0><<<(unsigned)blocks, THREADS, 0, st>>>(a, rows, cols);\n"
        "  else if (cache)\n"
        "    fused_row_kernel<1, CACHE_ITERS * VEC><<<(unsigned)blocks, THREADS, 0, st>>>(a, "
        "rows, cols);\n"
        "  else\n"
        "    fused_row_kernel<1, 0><<<(unsigned)blocks, THREADS, 0, st>>>(a, rows, cols);\n");
    return s;
  }

  static constexpr const char* kPrelude = R"(#include <kopt/abi.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

// Every value is a float in registers; 16-bit tensors convert on load and
// store, and each 16-bit value an op makes is rounded like PyTorch's.
__device__ __forceinline__ float kopt_f(float x) { return x; }
__device__ __forceinline__ float kopt_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float kopt_f(__half x) { return __half2float(x); }
__device__ __forceinline__ float kopt_round_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
__device__ __forceinline__ float kopt_round_f16(float x) { return __half2float(__float2half_rn(x)); }
__device__ __forceinline__ void kopt_put(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void kopt_put(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }
__device__ __forceinline__ void kopt_put(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void kopt_put(long long* p, int64_t i, long long v) { p[i] = v; }
__device__ __forceinline__ unsigned kopt_pack2(__nv_bfloat16* p, float a, float b) {
  return (unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(a)) |
         ((unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(b)) << 16);
}
__device__ __forceinline__ unsigned kopt_pack2(__half* p, float a, float b) {
  return (unsigned)__half_as_ushort(__float2half_rn(a)) | ((unsigned)__half_as_ushort(__float2half_rn(b)) << 16);
}
__device__ __forceinline__ float kopt_lo(const __nv_bfloat16*, unsigned w) {
  return __bfloat162float(__ushort_as_bfloat16((unsigned short)(w & 0xffffu)));
}
__device__ __forceinline__ float kopt_hi(const __nv_bfloat16*, unsigned w) {
  return __bfloat162float(__ushort_as_bfloat16((unsigned short)(w >> 16)));
}
__device__ __forceinline__ float kopt_lo(const __half*, unsigned w) {
  return __half2float(__ushort_as_half((unsigned short)(w & 0xffffu)));
}
__device__ __forceinline__ float kopt_hi(const __half*, unsigned w) {
  return __half2float(__ushort_as_half((unsigned short)(w >> 16)));
}

// PyTorch's semantics for each op, NaN included (relu and max keep a NaN).
__device__ __forceinline__ float kopt_sq(float x) { return x * x; }
__device__ __forceinline__ float kopt_relu(float x) { return x != x ? x : fmaxf(x, 0.0f); }
__device__ __forceinline__ float kopt_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float kopt_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float kopt_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f)); }
__device__ __forceinline__ float kopt_gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float kopt_softplus(float x, float beta, float threshold) {
  return x * beta > threshold ? x : log1pf(expf(beta * x)) / beta;
}
__device__ __forceinline__ float kopt_mish(float x) { return x * tanhf(kopt_softplus(x, 1.0f, 20.0f)); }
__device__ __forceinline__ float kopt_clamp(float x, float lo, float hi) {
  return x != x ? x : fminf(fmaxf(x, lo), hi);
}
__device__ __forceinline__ float kopt_hardsigmoid(float x) { return kopt_clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f; }
__device__ __forceinline__ float kopt_hardswish(float x) { return x * kopt_clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f; }
__device__ __forceinline__ float kopt_leaky(float x, float s) { return x > 0.0f ? x : x * s; }
__device__ __forceinline__ float kopt_elu(float x, float alpha, float scale, float input_scale) {
  return x > 0.0f ? scale * x : scale * alpha * expm1f(x * input_scale);
}
__device__ __forceinline__ float kopt_threshold(float x, float t, float v) { return x > t ? x : v; }
__device__ __forceinline__ float kopt_tanhshrink(float x) { return x - tanhf(x); }
// torch's max/min: a NaN wins. One max.NaN/min.NaN instruction from sm_80 on;
// the portable form compiles to compare-and-branch chains (a host build
// drops the #ifndef KOPT_HOST_EMULATION branch, asm and all).
__device__ __forceinline__ float kopt_max_portable(float a, float b) {
  return (a != a || a > b) ? a : (b != b ? b : fmaxf(a, b));
}
__device__ __forceinline__ float kopt_min_portable(float a, float b) {
  return (a != a || a < b) ? a : (b != b ? b : fminf(a, b));
}
#ifndef KOPT_HOST_EMULATION
__device__ __forceinline__ float kopt_max(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return kopt_max_portable(a, b);
#endif
}
__device__ __forceinline__ float kopt_min(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return kopt_min_portable(a, b);
#endif
}
#else
__device__ __forceinline__ float kopt_max(float a, float b) { return kopt_max_portable(a, b); }
__device__ __forceinline__ float kopt_min(float a, float b) { return kopt_min_portable(a, b); }
#endif
// torch.xlogy: 0 where x is 0 (unless y is NaN), else x * log(y).
__device__ __forceinline__ float kopt_xlogy(float x, float y) {
  return (x == 0.0f && y == y) ? 0.0f : x * logf(y);
}
// exp(x - m) with m = -inf (an all -inf row) giving exp(-inf - -inf) = NaN like torch.
__device__ __forceinline__ float kopt_exp_shift(float x, float m) { return expf(x - m); }
__device__ __forceinline__ float kopt_lse(float m, float s) { return isinf(m) ? m : m + logf(s); }
// First index wins ties; a NaN is the largest (smallest) and the first NaN wins.
__device__ __forceinline__ void kopt_arg_max(float& v, long long& i, float x, long long j) {
  const bool take = (x != x) ? !(v != v && i < j) : (v == v && (x > v || (x == v && j < i)));
  if (take) { v = x; i = j; }
}
__device__ __forceinline__ void kopt_arg_min(float& v, long long& i, float x, long long j) {
  const bool take = (x != x) ? !(v != v && i < j) : (v == v && (x < v || (x == v && j < i)));
  if (take) { v = x; i = j; }
}

// How a broadcast input is indexed: idx = sum_k (i / div[k]) % mod[k] * mul[k].
// `vc`: every div is a multiple of the launch's VEC, so the VEC elements of
// an aligned step share one broadcast value (a per-channel bias over H*W).
struct KoptBcast {
  int n;
  bool vc;
  int64_t div[4], mod[4], mul[4];
};
__device__ __forceinline__ int64_t kopt_bidx(const KoptBcast& b, int64_t i) {
  int64_t r = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k)
    if (k < b.n) r += (i / b.div[k]) % b.mod[k] * b.mul[k];
  return r;
}
// The same in 32-bit unsigned arithmetic (a 64-bit division is an emulated
// call of ~70 instructions, a 32-bit one ~20) when every index fits.
template <bool I32>
__device__ __forceinline__ int64_t kopt_bidx_t(const KoptBcast& b, int64_t i) {
  if constexpr (!I32) {
    return kopt_bidx(b, i);
  } else {
    uint32_t r = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (k < b.n) r += ((uint32_t)i / (uint32_t)b.div[k]) % (uint32_t)b.mod[k] * (uint32_t)b.mul[k];
    return (int64_t)r;
  }
}
template <bool I32>
__device__ __forceinline__ int64_t kopt_mod_t(int64_t i, int64_t m) {
  if constexpr (I32) return (int64_t)((uint32_t)i % (uint32_t)m);
  else return i % m;
}
static inline bool kopt_bcast_vec_const(const KoptBcast& b, int vec) {
  for (int k = 0; k < b.n; ++k)
    if (b.div[k] % vec != 0) return false;
  return true;
}
// Right-aligns t's shape against F's; merges runs of dims that t either
// follows or broadcasts. False when t does not broadcast to F or needs more
// than four terms.
static inline bool kopt_make_bcast(const kopt_tensor& t, const kopt_tensor& F, KoptBcast* b) {
  b->n = 0;
  b->vc = false;
  int64_t out_stride = 1, in_stride = 1;
  int k = -1;  // the term being grown; -1: none
  bool last_full = false;
  for (int d = F.ndim - 1; d >= 0; --d) {
    const int td = t.ndim - (F.ndim - d);
    const int64_t fs = F.shape[d];
    const int64_t ts = td >= 0 ? t.shape[td] : 1;
    if (ts != fs && ts != 1) return false;
    if (fs == 1) continue;
    const bool full = ts == fs;
    if (full) {
      if (k >= 0 && last_full) {
        b->mod[k] *= fs;
      } else {
        if (b->n == 4) return false;
        k = b->n++;
        b->div[k] = out_stride;
        b->mod[k] = fs;
        b->mul[k] = in_stride;
      }
      in_stride *= fs;
    }
    last_full = full;
    out_stride *= fs;
  }
  for (int d = 0; d < t.ndim - F.ndim; ++d)
    if (t.shape[d] != 1) return false;
  return true;
}

template <int VEC, typename T>
__device__ __forceinline__ void kopt_load(const T* __restrict__ p, int64_t i, float* v) {
  if constexpr (sizeof(T) == 4 && VEC == 4) {
    const float4 q = *reinterpret_cast<const float4*>(p + i);
    v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
  } else if constexpr (sizeof(T) == 4 && VEC == 2) {
    const float2 q = *reinterpret_cast<const float2*>(p + i);
    v[0] = q.x; v[1] = q.y;
  } else if constexpr (sizeof(T) == 2 && VEC == 4) {
    const uint2 q = *reinterpret_cast<const uint2*>(p + i);
    v[0] = kopt_lo(p, q.x); v[1] = kopt_hi(p, q.x); v[2] = kopt_lo(p, q.y); v[3] = kopt_hi(p, q.y);
  } else if constexpr (sizeof(T) == 2 && VEC == 2) {
    const unsigned q = *reinterpret_cast<const unsigned*>(p + i);
    v[0] = kopt_lo(p, q); v[1] = kopt_hi(p, q);
  } else {
#pragma unroll
    for (int u = 0; u < VEC; ++u) v[u] = kopt_f(p[i + u]);
  }
}
// V: the register type (float, or long long for an index output).
template <int VEC, typename T, typename V>
__device__ __forceinline__ void kopt_store(T* __restrict__ p, int64_t i, const V* v) {
  if constexpr (sizeof(T) == 4 && sizeof(V) == 4 && VEC == 4) {
    *reinterpret_cast<float4*>(p + i) = make_float4(v[0], v[1], v[2], v[3]);
  } else if constexpr (sizeof(T) == 4 && sizeof(V) == 4 && VEC == 2) {
    *reinterpret_cast<float2*>(p + i) = make_float2(v[0], v[1]);
  } else if constexpr (sizeof(T) == 2 && VEC == 4) {
    *reinterpret_cast<uint2*>(p + i) = make_uint2(kopt_pack2(p, v[0], v[1]), kopt_pack2(p, v[2], v[3]));
  } else if constexpr (sizeof(T) == 2 && VEC == 2) {
    *reinterpret_cast<unsigned*>(p + i) = kopt_pack2(p, v[0], v[1]);
  } else {
#pragma unroll
    for (int u = 0; u < VEC; ++u) kopt_put(p, i + u, v[u]);
  }
}

)";

  static constexpr const char* kBlockReduce =
      R"(__device__ __forceinline__ float kopt_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Every thread of the block gets the result; `red` may be reused at once.
__device__ __forceinline__ float kopt_block_sum(float v, float* red) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  v = kopt_warp_sum(v);
  __syncthreads();
  if (lane == 0) red[w] = v;
  __syncthreads();
  v = lane < WARPS ? red[lane] : 0.0f;
  return kopt_warp_sum(v);
}
__device__ __forceinline__ float kopt_block_max(float v, float* red) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kopt_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) red[w] = v;
  __syncthreads();
  v = lane < WARPS ? red[lane] : -INFINITY;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kopt_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float kopt_block_min(float v, float* red) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kopt_min(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) red[w] = v;
  __syncthreads();
  v = lane < WARPS ? red[lane] : INFINITY;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kopt_min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <bool MAX>
__device__ __forceinline__ void kopt_block_arg(float& v, long long& i, float* red, long long* redi) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const long long oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (MAX) kopt_arg_max(v, i, ov, oi); else kopt_arg_min(v, i, ov, oi);
  }
  __syncthreads();
  if (lane == 0) { red[w] = v; redi[w] = i; }
  __syncthreads();
  v = lane < WARPS ? red[lane] : (MAX ? -INFINITY : INFINITY);
  i = lane < WARPS ? redi[lane] : 0x7fffffffffffffffLL;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const long long oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (MAX) kopt_arg_max(v, i, ov, oi); else kopt_arg_min(v, i, ov, oi);
  }
}
template <bool MAX>
__device__ __forceinline__ void kopt_warp_arg(float& v, long long& i) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const long long oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (MAX) kopt_arg_max(v, i, ov, oi); else kopt_arg_min(v, i, ov, oi);
  }
}
__device__ __forceinline__ float kopt_warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kopt_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float kopt_warp_min(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = kopt_min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Online softmax statistics: m the running max, s the sum of exp(x - m).
__device__ __forceinline__ void kopt_online(float& m, float& s, float x) {
  if (x != x) {
    m = x;  // NaN: absorbing, like torch
  } else if (x > m) {
    s = s * expf(m - x) + 1.0f;
    m = x;
  } else if (x > -INFINITY) {
    s += expf(x - m);
  }
}
// One element's share of s once the row's max m is known (what the online
// update adds up to): -inf adds nothing, an element equal to m adds 1 (so a
// row whose max is +inf counts its infinities instead of making inf - inf).
__device__ __forceinline__ float kopt_online_term(float x, float m) {
  return x > -INFINITY ? (x == m ? 1.0f : expf(x - m)) : 0.0f;
}
__device__ __forceinline__ void kopt_online_merge(float& m, float& s, float om, float os) {
  const float nm = kopt_max(m, om);
  const float a = m > -INFINITY ? s * expf(m - nm) : 0.0f;
  const float b = om > -INFINITY ? os * expf(om - nm) : 0.0f;
  m = nm;
  s = (nm != nm) ? nm : a + b;
}
__device__ __forceinline__ void kopt_warp_online(float& m, float& s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, o);
    const float os = __shfl_xor_sync(0xffffffffu, s, o);
    kopt_online_merge(m, s, om, os);
  }
}
// The reductions of one row: its warp (ROW_WARPS) or its block.
__device__ __forceinline__ float kopt_row_sum(float v, float* red) {
  if constexpr (ROW_WARPS) return kopt_warp_sum(v); else return kopt_block_sum(v, red);
}
__device__ __forceinline__ float kopt_row_max(float v, float* red) {
  if constexpr (ROW_WARPS) return kopt_warp_max(v); else return kopt_block_max(v, red);
}
__device__ __forceinline__ float kopt_row_min(float v, float* red) {
  if constexpr (ROW_WARPS) return kopt_warp_min(v); else return kopt_block_min(v, red);
}
template <bool MAX>
__device__ __forceinline__ void kopt_row_arg(float& v, long long& i, float* red, long long* redi) {
  if constexpr (ROW_WARPS) kopt_warp_arg<MAX>(v, i); else kopt_block_arg<MAX>(v, i, red, redi);
}
__device__ __forceinline__ void kopt_row_online(float& m, float& s, float* red, float* red2) {
  kopt_warp_online(m, s);
  if constexpr (!ROW_WARPS) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) { red[w] = m; red2[w] = s; }
    __syncthreads();
    m = lane < WARPS ? red[lane] : -INFINITY;
    s = lane < WARPS ? red2[lane] : 0.0f;
    kopt_warp_online(m, s);
  }
}

)";

  const OpGraph& g_;
  std::size_t first_ = 0;
  std::vector<int> outputs_;
  bool region_ = false;
  int rdim_ = -1;            ///< the reduced dim when it is not F's last (see RDim)
  int trail_ = 1;            ///< F's trailing dims merged into its last (see the constructor)
  bool reduces_ = false;     ///< F is the input of a reduction (a row or column kernel)
  std::vector<int> inputs_;  ///< region: in[] as value ids
  Program p_;
  std::map<int, Val> vals_;
};

}  // namespace

// A loss: the forward's one output reduces everything before it
// (mean((p - t) ** 2), sum(|p - t|), amax of a chain). The same graph with
// that reduction over the last dim only is a row kernel (one value per row,
// every row read once); a second kernel of one block then combines the row
// values in a fixed order. Rows too few to fill the GPU are refused.
FusionResult FuseTotal(const OpGraph& graph, const std::string& why_whole) {
  FusionResult none;
  none.why_not = why_whole;
  if (graph.outputs.size() != 1 || graph.nodes.empty()) return none;
  OpGraph g = graph;
  // A loss op that reduces (mse_loss with reduction mean) becomes the
  // loss per element, then a mean or sum over everything.
  static const std::set<std::string> kLosses = {"mse_loss", "l1_loss", "smooth_l1_loss",
                                                "huber_loss"};
  if (const GraphNode& l = g.nodes.back();
      kLosses.count(l.base) && l.in.size() == 2 && l.out.size() == 1 && l.out[0] == g.outputs[0]) {
    const Json* red = OpGraph::Arg(l, 2, "reduction");
    const int reduction = red && red->is_number_integer() ? red->get<int>() : 1;
    if (reduction != 1 && reduction != 2) return none;
    GraphValue per = g.Value(l.in[0]);
    per.id = static_cast<int>(g.values.size());
    per.source = "op";
    per.node = static_cast<int>(g.nodes.size()) - 1;
    per.output = 0;
    per.abi_index = -1;
    per.role.clear();
    per.name.clear();
    g.values.push_back(per);
    GraphNode total;
    total.index = static_cast<int>(g.nodes.size());
    total.base = reduction == 1 ? "mean" : "sum";
    total.op = "aten::" + total.base;
    total.args = Json::array({Json{{"v", per.id}}});
    total.in = {per.id};
    total.out = {g.nodes.back().out[0]};
    g.values.at(static_cast<std::size_t>(total.out[0])).node = total.index;
    GraphNode& loss = g.nodes.back();
    const Json* extra = OpGraph::Arg(loss, 3, loss.base == "huber_loss" ? "delta" : "beta");
    Json args = Json::array({loss.args.at(0), loss.args.at(1), 0});
    if (extra) args.push_back(*extra);
    loss.args = args;
    loss.kwargs = Json::object();
    loss.out = {per.id};
    g.nodes.push_back(total);
  }
  // Scalar steps after the total (a KL divergence's batchmean divides the
  // sum by the batch; a loss weight multiplies it): the total kernel
  // applies them as it writes, in order.
  std::vector<std::pair<std::string, double>> post;  // ("/" or "*", constant)
  while (g.nodes.size() >= 2) {
    const GraphNode& t = g.nodes.back();
    const GraphNode& prev = g.nodes[g.nodes.size() - 2];
    const Json* c = OpGraph::Arg(t, 1, "other");
    const Json* rm = OpGraph::Arg(t, 2, "rounding_mode");
    const bool ok = (t.base == "div" || t.base == "mul") && !t.inplace && t.in.size() == 1 &&
                    t.out.size() == 1 && t.out[0] == g.outputs[0] && c && c->is_number() &&
                    (!rm || rm->is_null()) && prev.out.size() == 1 && prev.out[0] == t.in[0] &&
                    g.Value(t.in[0]).Numel() == 1 && g.Consumers(t.in[0]).size() == 1 &&
                    !g.IsOutput(t.in[0]) && g.Value(t.out[0]).dtype == "float32";
    if (!ok) break;
    post.insert(post.begin(), {t.base == "div" ? "/" : "*", c->get<double>()});
    const int y = t.out[0];
    g.nodes.pop_back();
    GraphNode& p = g.nodes.back();
    p.out[0] = y;
    GraphValue& yv = g.values.at(static_cast<std::size_t>(y));
    yv.node = p.index;
    yv.output = 0;
  }
  const GraphNode& last = g.nodes.back();
  static const std::set<std::string> kTotals = {"sum", "mean", "amax", "amin", "max", "min"};
  if (!kTotals.count(last.base) || last.out.size() != 1 || last.out[0] != g.outputs[0] ||
      last.in.empty())
    return none;
  const GraphValue x = g.Value(last.in[0]);
  const GraphValue y = g.Value(last.out[0]);
  const int rank = static_cast<int>(x.shape.size());
  if (y.Numel() != 1 || rank < 2 || x.Numel() <= 1 || x.dtype != "float32" || y.dtype != "float32")
    return none;
  if (const Json* dt = OpGraph::Arg(last, 99, "dtype"); dt && !dt->is_null()) return none;
  // Every dim reduced: no dim (or an empty list), or each dim listed.
  const Json* d = OpGraph::Arg(last, 1, "dim");
  bool all = !d || d->is_null() || (d->is_array() && d->empty());
  if (!all && d->is_array() && static_cast<int>(d->size()) == rank) {
    std::set<int> dims;
    for (const Json& e : *d)
      if (e.is_number_integer()) dims.insert((e.get<int>() % rank + rank) % rank);
    all = static_cast<int>(dims.size()) == rank;
  }
  if (!all) return none;
  const long long cols = x.shape.back();
  const long long rows = x.Numel() / std::max(1LL, cols);
  if (rows < 256) {
    none.why_not = fmt::format("{}; as rows of [{}], {} row(s) are too few to spread over the GPU",
                               why_whole, fmt::join(x.shape, ","), rows);
    return none;
  }
  const std::string base = last.base;
  GraphNode& n = g.nodes.back();
  n.args = Json::array({n.args.at(0), Json::array({rank - 1}), false});
  n.kwargs = Json::object();
  g.values.at(static_cast<std::size_t>(y.id)).shape.assign(x.shape.begin(), x.shape.end() - 1);
  FusionResult per_row = Builder(g, 0, g.outputs, false).Run();
  if (!per_row.kernel || per_row.kernel->kind != "row" || per_row.kernel->shape_input < 0)
    return none;
  FusedKernel k = *per_row.kernel;
  const std::string exported = "extern \"C\" int kopt_forward(";
  const std::size_t at = k.source.find(exported);
  if (at == std::string::npos) return none;
  k.source.replace(at, exported.size(), "static int kopt_forward_rows(");
  std::string written = "red[0] * scale";
  for (const auto& [o, c] : post) written = fmt::format("({} {} {})", written, o, FloatLiteral(c));
  const bool is_max = base == "amax" || base == "max", is_min = base == "amin" || base == "min";
  const std::string identity = is_max ? "-INFINITY" : is_min ? "INFINITY" : "0.0f";
  // max and min keep a NaN, as torch.amax does.
  const std::string combine = is_max   ? "(a != a || a >= b) ? a : b"
                              : is_min ? "(a != a || a <= b) ? a : b"
                                       : "a + b";
  k.source += fmt::format(R"(
#include <kopt/scratch.h>

// The total: the row values combined by one block in a fixed order (the
// same bits on every call).
__device__ __forceinline__ float kopt_total_op(float a, float b) {{ return {1}; }}

__global__ void __launch_bounds__(1024) kopt_total_kernel(const float* __restrict__ part,
                                                          int64_t rows, float scale,
                                                          float* __restrict__ out) {{
  __shared__ float red[1024];
  float acc = {0};
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) acc = kopt_total_op(acc, part[i]);
  red[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {{
    if ((int)threadIdx.x < s) red[threadIdx.x] = kopt_total_op(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }}
  if (threadIdx.x == 0) out[0] = {4};
}}

extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {{
  if (n_in <= {2} || n_out != 1) return 1;
  if (out[0].dtype != KOPT_FLOAT32 || kopt_numel(out[0]) != 1) return 6;
  const kopt_tensor& F = in[{2}];
  if (F.ndim < 1) return 2;
  const int64_t cols = F.shape[F.ndim - 1];
  const int64_t rows = cols > 0 ? kopt_numel(F) / cols : 0;
  if (rows <= 0) return 8;
  float* part = static_cast<float*>(kopt_scratch(sizeof(float) * (size_t)rows));
  if (!part) return 9;
  kopt_tensor r = out[0];
  r.data = part;
  r.ndim = 1;
  r.shape[0] = rows;
  r.strides[0] = 1;
  const int rc = kopt_forward_rows(in, n_in, &r, 1, stream);
  if (rc != 0) return rc;
  kopt_total_kernel<<<1, 1024, 0, (cudaStream_t)stream>>>(part, rows, {3}, static_cast<float*>(out[0].data));
  return (int)cudaGetLastError();
}}
)",
                          identity, combine, k.shape_input,
                          base == "mean" ? "1.0f / (float)rows" : "1.0f", written);
  k.kind = "total";
  k.about += fmt::format(", then one block combines the {} row values in a fixed order", rows);
  k.ops = per_row.kernel->ops;
  k.output_rows = {false};
  FusionResult r;
  r.kernel = std::move(k);
  return r;
}

// Reductions over several trailing dims (a mean over H and W, a layer norm
// over [C, H, W]) are reductions over one dim of the same memory seen with
// those dims merged. The graph with every shape merged so, and the number of
// dims merged; nullopt when a reduction of nodes [first, end) spans other
// dims, or a value read there cannot be merged (its trailing dims neither
// all 1 nor F's).
struct Merged {
  OpGraph graph;
  int trail = 1;
};

std::optional<Merged> MergeTrailingDims(const OpGraph& graph, std::size_t first) {
  auto dims_of = [](const GraphNode& n, int rank) -> std::optional<std::set<int>> {
    std::set<int> dims;
    if (n.base == "native_layer_norm") {
      const Json* ns = OpGraph::Arg(n, 1, "normalized_shape");
      if (!ns || !ns->is_array() || ns->empty() || static_cast<int>(ns->size()) > rank)
        return std::nullopt;
      for (int d = rank - static_cast<int>(ns->size()); d < rank; ++d) dims.insert(d);
      return dims;
    }
    const Json* d =
        OpGraph::Arg(n, n.base == "linalg_vector_norm" || n.base == "norm" ? 2 : 1, "dim");
    if (!d || !d->is_array() || d->empty()) return std::nullopt;
    for (const Json& e : *d) {
      if (!e.is_number_integer()) return std::nullopt;
      const int v = e.get<int>() < 0 ? e.get<int>() + rank : e.get<int>();
      if (v < 0 || v >= rank) return std::nullopt;
      dims.insert(v);
    }
    return dims;
  };
  static const std::set<std::string> kMergeable = {"sum",       "mean",
                                                   "amax",      "amin",
                                                   "var",       "std",
                                                   "var_mean",  "std_mean",
                                                   "logsumexp", "linalg_vector_norm",
                                                   "norm",      "native_layer_norm"};
  // The first reduction over two or more trailing dims sets F and k.
  std::vector<long long> T;
  int k = -1;
  for (std::size_t i = first; i < graph.nodes.size() && k < 0; ++i) {
    const GraphNode& n = graph.nodes[i];
    if (!kMergeable.count(n.base) || n.in.empty()) continue;
    const std::vector<long long>& x = graph.Value(n.in[0]).shape;
    const int rank = static_cast<int>(x.size());
    auto dims = dims_of(n, rank);
    if (!dims || dims->size() < 2 || *dims->rbegin() != rank - 1 ||
        *dims->begin() != rank - static_cast<int>(dims->size()))
      return std::nullopt;
    T = x;
    k = *dims->begin();
  }
  // k == 0 reduces everything: FuseTotal spreads that over rows instead.
  if (k <= 0) return std::nullopt;
  const int rank = static_cast<int>(T.size());
  const std::vector<long long> lead(T.begin(), T.begin() + k), tail(T.begin() + k, T.end());
  long long P = 1;
  for (long long d : tail) P *= d;
  // A value's merged shape, or nullopt.
  auto merge = [&](const std::vector<long long>& s) -> std::optional<std::vector<long long>> {
    if (s == lead) return s;  // one value per row, the merged dims dropped
    // Aligned by torch against per-row values (a bias [C] added to the
    // mean over H and W): the generator reads it in the rows' shape.
    if (BroadcastsTo(s, lead) && !BroadcastsTo(s, T)) return s;
    if (static_cast<int>(s.size()) > rank) return std::nullopt;
    std::vector<long long> a(static_cast<std::size_t>(rank) - s.size(), 1);
    a.insert(a.end(), s.begin(), s.end());
    const std::vector<long long> t(a.begin() + k, a.end());
    std::vector<long long> m(a.begin(), a.begin() + k);
    if (t == tail)
      m.push_back(P);
    else if (std::all_of(t.begin(), t.end(), [](long long d) { return d == 1; }))
      m.push_back(1);
    else
      return std::nullopt;
    // Drop the ones put in front (a bias [C, 1, 1] stays [C, 1]).
    const std::size_t added = static_cast<std::size_t>(rank) - s.size();
    std::size_t drop = std::min(added, m.size() - 1);
    m.erase(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(drop));
    return m;
  };
  Merged out;
  out.graph = graph;
  out.trail = rank - k;
  OpGraph& g = out.graph;
  std::set<int> touched;
  for (std::size_t i = first; i < g.nodes.size(); ++i) {
    GraphNode& n = g.nodes[i];
    for (int v : n.in) touched.insert(v);
    for (int v : n.out) touched.insert(v);
    if (kMergeable.count(n.base) && !n.in.empty()) {
      auto dims = dims_of(n, static_cast<int>(g.Value(n.in[0]).shape.size()));
      if (!dims || static_cast<int>(dims->size()) != rank - k || *dims->begin() != k ||
          g.Value(n.in[0]).shape != T)
        return std::nullopt;  // another reduction: the generator would refuse anyway
      if (n.base == "native_layer_norm") {
        if (n.kwargs.contains("normalized_shape"))
          n.kwargs["normalized_shape"] = Json::array({P});
        else
          n.args.at(1) = Json::array({P});
      } else {
        const bool norm = n.base == "linalg_vector_norm" || n.base == "norm";
        if (n.kwargs.contains("dim"))
          n.kwargs["dim"] = Json::array({k});
        else
          n.args.at(norm ? 2 : 1) = Json::array({k});
      }
    }
  }
  for (int id : touched) {
    GraphValue& v = g.values.at(static_cast<std::size_t>(id));
    auto m = merge(v.shape);
    if (!m) return std::nullopt;
    v.shape = *m;
  }
  return out;
}

FusionResult FuseGraph(const OpGraph& graph) {
  FusionResult r = Builder(graph, 0, graph.outputs, false).Run();
  if (r.kernel) return r;
  if (auto m = MergeTrailingDims(graph, 0))
    if (FusionResult mr = Builder(m->graph, 0, m->graph.outputs, false, m->trail).Run(); mr.kernel)
      return mr;
  return FuseTotal(graph, r.why_not);
}

FusionResult FuseTail(const OpGraph& graph, std::size_t first_node) {
  FusionResult r = Builder(graph, first_node, graph.outputs, true).Run();
  if (r.kernel) return r;
  if (auto m = MergeTrailingDims(graph, first_node))
    if (FusionResult mr = Builder(m->graph, first_node, m->graph.outputs, true, m->trail).Run();
        mr.kernel)
      return mr;
  return r;
}

}  // namespace kopt
