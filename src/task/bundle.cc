#include "task/bundle.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace kopt {
namespace {

std::vector<long long> IntList(const Json& j) {
  std::vector<long long> v;
  if (j.is_array())
    for (const auto& x : j) v.push_back(x.get<long long>());
  return v;
}

}  // namespace

TensorSpec TensorSpecFromJson(const Json& j, const std::string& default_role) {
  TensorSpec t;
  t.role = default_role;
  t.dtype = "float32";
  if (!j.is_object()) return t;
  t.name = j.value("name", "");
  t.role = j.value("role", default_role);
  t.dtype = j.value("dtype", "float32");
  if (t.dtype.rfind("torch.", 0) == 0) t.dtype = t.dtype.substr(6);
  t.shape = IntList(j.value("shape", Json::array()));
  t.strides = IntList(j.value("strides", Json::array()));
  return t;
}

Json ToJson(const TensorSpec& t) {
  return Json{{"name", t.name},
              {"role", t.role},
              {"dtype", t.dtype},
              {"shape", t.shape},
              {"strides", t.strides}};
}

double DtypeBytes(const std::string& dtype) {
  if (dtype == "float64" || dtype == "int64" || dtype == "complex64") return 8;
  if (dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "float16" || dtype == "bfloat16" || dtype == "int16") return 2;
  return 1;  // bool, uint8, int8, float8 variants
}

long long TensorSpec::Numel() const {
  long long n = 1;
  for (long long s : shape) n *= s;
  return n;
}

bool TaskBundle::HasFlag(const std::string& f) const {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}

std::optional<double> SpeedupVsEager(const Measured& m, const TaskBundle& b) {
  if (auto s = m.SpeedupVsEager()) return s;
  if (b.eager_ms && m.time_ms.median > 0) return b.eager_ms->median / m.time_ms.median;
  return std::nullopt;
}

std::optional<double> SpeedupVsCompile(const Measured& m, const TaskBundle& b) {
  if (auto s = m.SpeedupVsCompile()) return s;
  if (b.compile_ms && m.time_ms.median > 0) return b.compile_ms->median / m.time_ms.median;
  return std::nullopt;
}

bool TaskBundle::Degenerate() const {
  return HasFlag(flags::kNearZero) || HasFlag(flags::kNearConstant) ||
         HasFlag(flags::kSeedIndependent);
}

double FloorMs(double min_bytes, double matrix_flops, double conv_flops, double other_flops,
               const std::string& dtype, const Ceilings& c, std::string* bound) {
  // Strict fp32 matrix products: CUDA cores, or split-precision 3xTF32 on
  // the tensor cores (fp32-level accuracy from three TF32 products per
  // multiply-add: a third of the TF32 rate), whichever is faster; kopt's
  // GEMM templates run the latter (kernels/gemm).
  double matrix_rate = std::max(c.fp32_flops_per_s, c.tf32_flops_per_s / 3);
  double conv_rate =
      std::max(c.fp32_flops_per_s, c.tf32_flops_per_s);  // cuDNN allows TF32 by default
  if (dtype == "bfloat16") matrix_rate = conv_rate = std::max(matrix_rate, c.bf16_flops_per_s);
  if (dtype == "float16") matrix_rate = conv_rate = std::max(matrix_rate, c.fp16_flops_per_s);
  double memory_s = c.bandwidth_bytes_per_s > 0 ? min_bytes / c.bandwidth_bytes_per_s : 0;
  double compute_s = 0;
  conv_flops = std::min(conv_flops, matrix_flops);
  if (matrix_rate > 0) compute_s += (matrix_flops - conv_flops) / matrix_rate;
  if (conv_rate > 0) compute_s += conv_flops / conv_rate;
  if (c.fp32_flops_per_s > 0) {
    // Elementwise work in 16-bit types can run at twice the fp32 rate.
    double other_rate = c.fp32_flops_per_s * ((dtype == "bfloat16" || dtype == "float16") ? 2 : 1);
    compute_s += other_flops / other_rate;
  }
  if (bound) *bound = compute_s > memory_s ? "compute" : "memory";
  return 1e3 * std::max(memory_s, compute_s);
}

namespace {

/// Time steps x layers of a recurrent op, from its input's shape and its
/// arguments: aten::_cudnn_rnn(input, weights, stride0, weight_buf, hx, cx,
/// mode, hidden, proj, num_layers, batch_first, ...) and aten::lstm/gru/
/// rnn_tanh/rnn_relu(input, hx, params, has_biases, num_layers, dropout,
/// train, bidirectional, batch_first). 1 when the arguments do not say.
long long RecurrentSteps(const Json& node, const Json& values) {
  const std::string op = node.value("op", "");
  const std::string base = op.substr(op.find("::") == std::string::npos ? 0 : op.find("::") + 2);
  const std::string name = base.substr(0, base.find('.'));
  std::size_t layers_at = 0, batch_first_at = 0;
  if (name == "_cudnn_rnn" || name == "miopen_rnn") {
    layers_at = 9;
    batch_first_at = 10;
  } else if (name == "lstm" || name == "gru" || name == "rnn_tanh" || name == "rnn_relu") {
    layers_at = 4;
    batch_first_at = 8;
  } else {
    return 0;
  }
  const Json args = node.value("args", Json::array());
  const Json ins = node.value("in", Json::array());
  if (!args.is_array() || ins.empty() || !ins[0].is_number_integer()) return 1;
  const std::string key = std::to_string(ins[0].get<long long>());
  const Json* v = nullptr;
  if (values.is_object() && values.contains(key)) v = &values[key];
  if (values.is_array() && ins[0].get<std::size_t>() < values.size())
    v = &values[ins[0].get<std::size_t>()];
  if (!v || !v->is_object() || !v->contains("shape") || !(*v)["shape"].is_array()) return 1;
  const Json& shape = (*v)["shape"];
  if (shape.size() < 2) return 1;  // packed sequences: the steps are unknown
  const bool batch_first = args.size() > batch_first_at && args[batch_first_at].is_boolean() &&
                           args[batch_first_at].get<bool>();
  const long long steps = shape[batch_first ? 1 : 0].get<long long>();
  const long long layers = args.size() > layers_at && args[layers_at].is_number_integer()
                               ? args[layers_at].get<long long>()
                               : 1;
  return std::max(1LL, steps) * std::max(1LL, layers);
}

}  // namespace

int LatencyStages(const Json& graph) {
  if (!graph.is_object() || !graph.contains("nodes") || !graph["nodes"].is_array()) return 0;
  const Json values = graph.value("values", Json());
  std::map<long long, long long> depth;  // value id -> dependent steps to make it
  long long longest = 0;
  for (const Json& n : graph["nodes"]) {
    if (!n.is_object()) continue;
    long long in_depth = 0;
    for (const Json& v : n.value("in", Json::array()))
      if (v.is_number_integer())
        if (auto it = depth.find(v.get<long long>()); it != depth.end())
          in_depth = std::max(in_depth, it->second);
    long long own = RecurrentSteps(n, values);
    if (own == 0) own = n.value("class", "") == "matrix" ? 1 : 0;
    const long long d = in_depth + own;
    for (const Json& v : n.value("out", Json::array()))
      if (v.is_number_integer()) depth[v.get<long long>()] = d;
    longest = std::max(longest, d);
  }
  return static_cast<int>(std::min<long long>(longest, 1 << 30));
}

std::string ComputeDtype(const TaskBundle& b) {
  std::string dtype = b.outputs.empty() ? "float32" : b.outputs[0].dtype;
  for (const auto& t : b.inputs)
    if (t.role == "input" && (t.dtype == "bfloat16" || t.dtype == "float16")) dtype = t.dtype;
  return dtype;
}

std::map<std::string, double> FlopsByPrecision(const TaskBundle& b) {
  std::map<std::string, double> by;
  const std::string dtype = ComputeDtype(b);
  const double matrix = std::max(0.0, b.matrix_flops);
  const double conv = std::min(std::max(0.0, b.conv_flops), matrix);
  if (dtype == "float16" || dtype == "bfloat16") {
    by[dtype == "float16" ? "fp16" : "bf16"] += matrix;
  } else {
    by["fp32"] += matrix - conv;
    if (conv > 0) by["tf32"] += conv;
  }
  const double other = std::max(0.0, b.flops - matrix);
  if (other > 0) by["fp32"] += other;
  return by;
}

DistributionPlan PlanDistributions(const TaskBundle& b,
                                   const std::optional<std::vector<std::string>>& wanted) {
  DistributionPlan plan;
  std::vector<std::string> names = wanted ? *wanted : std::vector<std::string>{"signed", "wide"};
  for (const auto& name : names) {
    auto it = b.distributions.find(name);
    if (it == b.distributions.end()) {
      plan.skipped.push_back({name, "not captured (capture the task again with --refresh)"});
    } else if (!it->second.changes_inputs) {
      plan.skipped.push_back({name, "the task has no floating-point inputs to transform"});
    } else if (!it->second.finite) {
      plan.skipped.push_back({name, it->second.error.empty() ? "the reference is not finite there"
                                                             : "the reference fails there"});
    } else {
      plan.checked.push_back(name);
    }
  }
  if (wanted)
    for (const auto& [name, facts] : b.distributions)
      if (std::find(names.begin(), names.end(), name) == names.end())
        plan.skipped.push_back({name, "the contract leaves it out"});
  return plan;
}

std::string DescribeDistributions(const DistributionPlan& plan) {
  std::string s = "the task's inputs";
  for (const auto& d : plan.checked) s += ", " + d;
  if (!plan.skipped.empty()) {
    s += " (not";
    for (size_t i = 0; i < plan.skipped.size(); ++i)
      s += fmt::format("{} {}: {}", i ? ";" : "", plan.skipped[i].first, plan.skipped[i].second);
    s += ")";
  }
  return s;
}

Json ToJson(const TaskBundle& b) {
  Json j;
  j["task_name"] = b.task_name;
  j["task_path"] = b.task_path;
  j["task_hash"] = b.task_hash;
  j["device"] = ToJson(b.device);
  j["inputs"] = Json::array();
  for (const auto& t : b.inputs) j["inputs"].push_back(ToJson(t));
  j["outputs"] = Json::array();
  for (const auto& t : b.outputs) j["outputs"].push_back(ToJson(t));
  j["n_forward_inputs"] = b.n_forward_inputs;
  j["training"] = b.training;
  j["flops"] = b.flops;
  j["matrix_flops"] = b.matrix_flops;
  j["min_bytes"] = b.min_bytes;
  j["graph"] = b.graph;
  if (b.uncounted_ops) j["uncounted_ops"] = *b.uncounted_ops;
  j["kernels"] = Json::array();
  for (const auto& k : b.kernels)
    j["kernels"].push_back({{"name", k.name}, {"calls", k.calls}, {"device_ms", k.device_ms}});
  j["ref_error"] = b.ref_error;
  j["flags"] = b.flags;
  j["flag_notes"] = b.flag_notes;
  j["floor_ms"] = b.floor_ms;
  j["floor_bound"] = b.floor_bound;
  j["hard_floor_ms"] = b.hard_floor_ms;
  j["conv_flops"] = b.conv_flops;
  j["latency_stages"] = b.latency_stages;
  if (b.eager_ms) j["eager_ms"] = ToJson(*b.eager_ms);
  if (b.compile_ms) j["compile_ms"] = ToJson(*b.compile_ms);
  if (!b.compile_error.empty()) j["compile_error"] = b.compile_error;
  j["distributions"] = Json::object();
  for (const auto& [name, f] : b.distributions)
    j["distributions"][name] = {{"about", f.about},
                                {"finite", f.finite},
                                {"changes_inputs", f.changes_inputs},
                                {"error", f.error},
                                {"varies", f.varies}};
  return j;
}

TaskBundle BundleFromJson(const Json& j) {
  TaskBundle b;
  b.task_name = j.value("task_name", "");
  b.task_path = j.value("task_path", "");
  b.task_hash = j.value("task_hash", "");
  if (j.contains("device")) b.device = DeviceInfoFromJson(j["device"]);
  for (const auto& t : j.value("inputs", Json::array()))
    b.inputs.push_back(TensorSpecFromJson(t, "input"));
  for (const auto& t : j.value("outputs", Json::array()))
    b.outputs.push_back(TensorSpecFromJson(t, "output"));
  b.n_forward_inputs = j.value("n_forward_inputs", 0);
  b.training = j.value("training", false);
  b.flops = j.value("flops", 0.0);
  b.matrix_flops = j.value("matrix_flops", 0.0);
  b.min_bytes = j.value("min_bytes", 0.0);
  b.graph = j.value("graph", Json::object());
  if (j.contains("uncounted_ops") && j["uncounted_ops"].is_array())
    b.uncounted_ops = j["uncounted_ops"].get<std::vector<std::string>>();
  for (const auto& k : j.value("kernels", Json::array()))
    b.kernels.push_back({k.value("name", ""), k.value("calls", 0.0), k.value("device_ms", 0.0)});
  b.ref_error = j.value("ref_error", Json());
  b.flags = j.value("flags", std::vector<std::string>{});
  b.flag_notes = j.value("flag_notes", std::vector<std::string>{});
  b.floor_ms = j.value("floor_ms", 0.0);
  b.floor_bound = j.value("floor_bound", "");
  b.hard_floor_ms = j.value("hard_floor_ms", 0.0);
  b.conv_flops = j.value("conv_flops", 0.0);
  b.latency_stages = j.value("latency_stages", 0);
  if (j.contains("eager_ms")) b.eager_ms = SampleSummaryFromJson(j["eager_ms"]);
  if (j.contains("compile_ms")) b.compile_ms = SampleSummaryFromJson(j["compile_ms"]);
  b.compile_error = j.value("compile_error", "");
  const Json distributions =
      j.value("distributions", Json::object());  // items() must not outlive it
  for (const auto& [name, d] : distributions.items()) {
    DistributionFacts f;
    f.about = d.value("about", "");
    f.finite = d.value("finite", false);
    f.changes_inputs = d.value("changes_inputs", false);
    f.error = d.value("error", "");
    f.varies = d.value("varies", true);
    b.distributions[name] = f;
  }
  return b;
}

}  // namespace kopt
