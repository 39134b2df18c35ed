#include "plan/hybrid.h"

#include <map>
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

/// Arguments derived from the input's shape, written from the shape at run
/// time so the replay holds at any size (the verifier's second shape):
/// view/reshape sizes, group norm's N, C and HxW, layer norm's
/// normalized_shape. Empty: none of those (write the captured values).
std::map<std::size_t, std::string> ShapeArgs(const GraphNode& n, const OpGraph& g) {
  std::map<std::size_t, std::string> out;
  if (n.in.empty()) return out;
  const std::string x = fmt::format("v{}", n.in[0]);
  const auto& in_shape = g.Value(n.in[0]).shape;
  if ((n.base == "view" || n.base == "_unsafe_view" || n.base == "reshape") && !n.out.empty()) {
    const auto& o = g.Value(n.out[0]).shape;
    std::vector<std::string> dims;
    int unknown = 0;
    for (std::size_t i = 0; i < o.size(); ++i) {
      const long long j =
          static_cast<long long>(in_shape.size()) - static_cast<long long>(o.size() - i);
      if (j >= 0 && in_shape[static_cast<std::size_t>(j)] == o[i] && o[i] != 1) {
        dims.push_back(fmt::format("{}.shape[{}]", x, j));
      } else if (o[i] == 1) {
        dims.push_back("1");
      } else {
        dims.push_back("-1");
        ++unknown;
      }
    }
    if (unknown <= 1) out[1] = "[" + fmt::format("{}", fmt::join(dims, ", ")) + "]";
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

std::optional<std::string> HybridSource(const OpGraph& g, std::size_t first, const FusedKernel& k,
                                        const std::string& task_source, std::string* why) {
  if (k.shape_input < 0 || k.shape_input >= static_cast<int>(k.inputs.size())) {
    *why = "the fused tail reads no input element by element, so its output shape is unknown";
    return std::nullopt;
  }
  std::string body;
  std::set<int> bound;
  auto bind = [&](int id) -> bool {
    if (bound.count(id)) return true;
    const GraphValue& v = g.Value(id);
    if (v.source != "abi") return v.source == "op";
    if (v.role == "param")
      body += fmt::format("        v{} = _p[{}]\n", id, Json(v.name).dump());
    else if (v.role == "buffer")
      body += fmt::format("        v{} = _b[{}]\n", id, Json(v.name).dump());
    else
      body += fmt::format("        v{} = args[{}]\n", id, v.abi_index);
    bound.insert(id);
    return true;
  };
  for (std::size_t i = 0; i < first; ++i) {
    const GraphNode& n = g.nodes[i];
    for (int v : n.in)
      if (!bind(v)) {
        *why = fmt::format("{} reads a constant made outside any op", n.op);
        return std::nullopt;
      }
    std::vector<std::string> parts;
    const auto shaped = ShapeArgs(n, g);
    for (std::size_t ai = 0; ai < n.args.size(); ++ai) {
      if (auto it = shaped.find(ai); it != shaped.end()) {
        parts.push_back(it->second);
        continue;
      }
      std::string x;
      if (!Py(n.args[ai], g, &x, why)) return std::nullopt;
      parts.push_back(x);
    }
    for (const auto& [key, a] : n.kwargs.items()) {
      if (key == "out") {
        *why = n.op + " writes into a given tensor";
        return std::nullopt;
      }
      std::string x;
      if (!Py(a, g, &x, why)) return std::nullopt;
      parts.push_back(key + "=" + x);
    }
    const std::string name =
        n.op.substr(n.op.find("::") == std::string::npos ? 0 : n.op.find("::") + 2);
    body += fmt::format("        _r = torch.ops.aten.{}({})\n", name, fmt::join(parts, ", "));
    if (n.out.size() == 1) {
      body +=
          fmt::format("        v{} = _r[0] if isinstance(_r, (tuple, list)) else _r\n", n.out[0]);
    } else {
      for (std::size_t j = 0; j < n.out.size(); ++j)
        body += fmt::format("        v{} = _r[{}]\n", n.out[j], j);
    }
    for (int v : n.out) bound.insert(v);
  }
  std::vector<std::string> ins;
  for (int v : k.inputs) {
    if (!bind(v)) {
      *why = "the fused tail reads a constant made outside any op";
      return std::nullopt;
    }
    ins.push_back(fmt::format("v{}.contiguous()", v));
  }
  const std::string shape_src =
      fmt::format("v{}", k.inputs[static_cast<std::size_t>(k.shape_input)]);
  const auto& F = g.Value(k.inputs[static_cast<std::size_t>(k.shape_input)]).shape;
  std::vector<std::string> outs;
  for (std::size_t j = 0; j < g.outputs.size(); ++j) {
    const GraphValue& o = g.Value(g.outputs[j]);
    const std::string dtype = o.dtype == "int64" ? "torch.int64" : "torch.float32";
    std::string shape;
    if (j < k.output_rows.size() && k.output_rows[j]) {
      const bool keep = o.shape.size() == F.size() && !o.shape.empty() && o.shape.back() == 1;
      shape = keep ? fmt::format("tuple({}.shape[:-1]) + (1,)", shape_src)
                   : fmt::format("tuple({}.shape[:-1])", shape_src);
    } else {
      if (o.shape != F) {
        *why = "an output's shape differs from the fused tail's iteration shape";
        return std::nullopt;
      }
      shape = fmt::format("tuple({}.shape)", shape_src);
    }
    body += fmt::format("        o{} = torch.empty({}, dtype={}, device={}.device)\n", j, shape,
                        dtype, shape_src);
    outs.push_back(fmt::format("o{}", j));
  }
  body +=
      fmt::format("        _kopt_tail([{}], [{}])\n", fmt::join(ins, ", "), fmt::join(outs, ", "));
  body += outs.size() == 1 ? "        return o0\n"
                           : fmt::format("        return ({},)\n", fmt::join(outs, ", "));

  std::string src =
      "# Generated by kopt's planner (src/plan/hybrid.cc): the ops before the tail run as PyTorch\n"
      "# operators, replayed from the captured graph; the tail is one generated kernel.\n"
      "# The task's own source follows, so ModelNew has the Model's parameters.\n";
  src += task_source;
  if (!src.empty() && src.back() != '\n') src += "\n";
  src +=
      "\n\n# ---- kopt: the fused tail ----\nimport kopt as _kopt_lib\n\nCUDA_SOURCE = r\"\"\"\n" +
      k.source + "\"\"\"\n\n_kopt_tail = _kopt_lib.load_cuda(CUDA_SOURCE)\n\n\n";
  src +=
      "class ModelNew(Model):\n"
      "    def forward(self, *args):\n"
      "        _p = dict(self.named_parameters())\n"
      "        _b = dict(self.named_buffers())\n";
  src += body;
  return src;
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
