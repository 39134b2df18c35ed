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
  static const std::set<std::string> kGemm = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear"};
  static const std::set<std::string> kReduce = {"sum",
                                                "mean",
                                                "amax",
                                                "amin",
                                                "max",
                                                "min",
                                                "argmax",
                                                "argmin",
                                                "softmax",
                                                "log_softmax",
                                                "_softmax",
                                                "_log_softmax",
                                                "logsumexp",
                                                "native_layer_norm",
                                                "native_group_norm",
                                                "native_batch_norm",
                                                "_native_batch_norm_legit",
                                                "var",
                                                "std",
                                                "norm",
                                                "prod",
                                                "cumsum",
                                                "cumprod",
                                                "var_mean",
                                                "rsqrt"};
  bool gemm = false, conv = false, reduce = false, pool = false, scan = false;
  for (const GraphNode& n : g->nodes) {
    gemm |= kGemm.count(n.base) > 0 || n.matrix;
    conv |= n.base.find("convolution") != std::string::npos || n.base.rfind("conv", 0) == 0;
    pool |= n.base.find("pool") != std::string::npos;
    scan |= n.base == "cumsum" || n.base == "cumprod";
    reduce |= kReduce.count(n.base) > 0;
  }
  if (conv) return "conv";
  if (gemm) return "gemm";
  if (pool) return "pool";
  if (scan) return "scan";
  if (reduce) return "reduction";
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
