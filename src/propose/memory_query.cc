#include "propose/memory_query.h"

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/paths.h"
#include "plan/op_graph.h"

namespace kopt {

std::string TaskOpClass(const TaskBundle* bundle) {
  if (!bundle || bundle->graph.is_null() || bundle->graph.empty()) return "";
  std::optional<OpGraph> g;
  try {
    g = OpGraphFromJson(bundle->graph);
  } catch (const std::exception&) {
    return "";
  }
  if (!g) return "";
  // The names of knowledge/vocabulary.json: the most specific class present
  // wins (a layer norm is a norm before it is a reduction).
  static const std::set<std::string> kGemm = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear"};
  static const std::set<std::string> kNorm = {
      "native_layer_norm", "native_group_norm", "native_batch_norm", "_native_batch_norm_legit",
      "layer_norm",        "group_norm",        "batch_norm",        "rsqrt"};
  static const std::set<std::string> kSoftmax = {"softmax", "log_softmax", "_softmax",
                                                 "_log_softmax", "logsumexp"};
  static const std::set<std::string> kLoss = {
      "mse_loss",       "nll_loss_forward",     "nll_loss", "cross_entropy_loss", "l1_loss",
      "smooth_l1_loss", "binary_cross_entropy", "kl_div",   "huber_loss"};
  static const std::set<std::string> kReduce = {"sum",  "mean",   "amax",    "amin", "max",
                                                "min",  "argmax", "argmin",  "var",  "std",
                                                "norm", "prod",   "var_mean"};
  int matrix = 0;
  bool conv = false, attention = false, recurrent = false, norm = false, softmax = false,
       loss = false, pool = false, scan = false, reduce = false;
  for (const GraphNode& n : g->nodes) {
    const std::string& b = n.base;
    bool is_conv = b.find("convolution") != std::string::npos || b.rfind("conv", 0) == 0;
    conv |= is_conv;
    matrix += kGemm.count(b) > 0 || n.matrix || is_conv;
    attention |= b.find("attention") != std::string::npos;
    recurrent |= b.find("lstm") != std::string::npos || b.find("gru") != std::string::npos ||
                 b.find("rnn") != std::string::npos;
    norm |= kNorm.count(b) > 0;
    softmax |= kSoftmax.count(b) > 0;
    loss |= kLoss.count(b) > 0;
    pool |= b.find("pool") != std::string::npos;
    scan |= b == "cumsum" || b == "cumprod" || b == "logcumsumexp";
    reduce |= kReduce.count(b) > 0;
  }
  // A forward of several matrix layers and more: a whole model (launch
  // chains, fusion across layers).
  if (matrix >= 3 && g->nodes.size() >= 10) return "model";
  if (recurrent) return "recurrent";
  if (attention) return "attention";
  if (conv) return "conv";
  if (matrix > 0) return "gemm";
  // A forward that returns only scalars from a reduction over a combination
  // of two forward inputs is a loss however it was decomposed (MSE arrives as
  // sub, pow, mean).
  bool scalar_out = !g->outputs.empty();
  for (int id : g->outputs) scalar_out &= g->Value(id).shape.empty();
  int abi_inputs = 0;
  for (const GraphValue& v : g->values) abi_inputs += v.source == "abi" && v.role == "input";
  if (loss || (scalar_out && reduce && abi_inputs >= 2)) return "loss";
  if (norm) return "norm";
  if (softmax) return "softmax";
  if (pool) return "pool";
  if (scan) return "scan";
  if (reduce) return "reduce";
  return g->nodes.empty() ? "" : "elementwise";
}

std::string Bottleneck(const TaskBundle* bundle, const std::vector<Diagnosis>& ds) {
  for (const Diagnosis& d : ds) {
    if (d.tool.find("launch") != std::string::npos) return "latency";
    if (d.tool.find("memory") != std::string::npos || d.tool.find("coalesc") != std::string::npos)
      return "memory";
  }
  return bundle ? bundle->floor_bound : "";
}

KnowledgeQuery MemoryQuery(const ProposeContext& context, const std::vector<Diagnosis>& ds,
                           int limit) {
  KnowledgeQuery q;
  q.op_class = TaskOpClass(context.bundle);
  q.bottleneck = Bottleneck(context.bundle, ds);
  q.arch = context.arch;
  std::vector<std::string> words;
  for (const Diagnosis& d : ds) words.push_back(d.tool);
  q.text = fmt::format("{}", fmt::join(words, " "));
  q.limit = limit;
  return q;
}

std::unique_ptr<KnowledgeBase> OpenProposerMemory(const ProposerOptions& o, std::string* why) {
  std::filesystem::path db = o.knowledge_db;
  if (db.empty()) db = DefaultMemoryPath(o.cache_dir);
  try {
    return OpenKnowledgeBase(db, o.knowledge_dir);
  } catch (const Error& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

}  // namespace kopt
