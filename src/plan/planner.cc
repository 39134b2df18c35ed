#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "plan/fusion.h"
#include "plan/hybrid.h"

namespace kopt {
namespace {

/// A reference is launch-bound when it launches at least this many kernels
/// and the GPU idles for at least this share of its eager time.
constexpr double kGraphMinLaunches = 3;
constexpr double kGraphMinIdleShare = 0.15;

const std::set<std::string> kShapeOnly = {"view",       "_unsafe_view", "reshape",    "unsqueeze",
                                          "squeeze",    "alias",        "detach",     "clone",
                                          "contiguous", "expand",       "lift_fresh", "flatten"};

/// The ops that compute something (shape-only views dropped).
std::vector<const GraphNode*> Significant(const OpGraph& g) {
  std::vector<const GraphNode*> out;
  for (const GraphNode& n : g.nodes) {
    if (kShapeOnly.count(n.base)) continue;
    if (n.base == "slice" && !n.in.empty()) {  // a slice that keeps the whole dim changes nothing
      const Json* d = OpGraph::Arg(n, 1, "dim");
      const Json* b = OpGraph::Arg(n, 2, "start");
      const Json* e = OpGraph::Arg(n, 3, "end");
      const Json* st = OpGraph::Arg(n, 4, "step");
      const auto& shape = g.Value(n.in[0]).shape;
      if (d && d->is_number_integer() && (!b || b->is_null() || *b == 0) &&
          (!st || st->is_null() || *st == 1)) {
        long long dim = d->get<long long>();
        if (dim < 0) dim += static_cast<long long>(shape.size());
        if (dim >= 0 && dim < static_cast<long long>(shape.size()) &&
            (!e || e->is_null() ||
             (e->is_number_integer() &&
              e->get<long long>() >= shape[static_cast<std::size_t>(dim)])))
          continue;
      }
    }
    out.push_back(&n);
  }
  return out;
}

/// The ABI index a value comes from, looking through shape-only views; -1
/// when it is computed.
int AbiOf(const OpGraph& g, int id) {
  for (int guard = 0; guard < 64; ++guard) {
    const GraphValue& v = g.Value(id);
    if (v.source == "abi") return v.abi_index;
    const GraphNode* p = g.Producer(id);
    if (!p || !kShapeOnly.count(p->base) || p->in.empty()) return -1;
    id = p->in[0];
  }
  return -1;
}

std::optional<long long> IntArg(const GraphNode& n, std::size_t i, const char* kw = nullptr) {
  const Json* a = OpGraph::Arg(n, i, kw);
  if (!a) return std::nullopt;
  if (a->is_number_integer()) return a->get<long long>();
  if (a->is_array() && a->size() == 1 && a->at(0).is_number_integer())
    return a->at(0).get<long long>();
  return std::nullopt;
}

/// The first template of class `cls` (that implements `op`, when given).
const KernelTemplate* FindTemplate(const std::vector<KernelTemplate>& ts, const std::string& cls,
                                   const std::string& op = "") {
  for (const KernelTemplate& t : ts)
    if (t.op_class == cls &&
        (op.empty() || std::find(t.ops.begin(), t.ops.end(), op) != t.ops.end()))
      return &t;
  return nullptr;
}

/// The captured device's compute capability as e.g. 90; 0 when unknown.
int ComputeCapability(const PlanInputs& in) {
  return in.bundle ? in.bundle->device.cc_major * 10 + in.bundle->device.cc_minor : 0;
}

const KernelTemplate* FindTemplateById(const std::vector<KernelTemplate>& ts,
                                       const std::string& id) {
  for (const KernelTemplate& t : ts)
    if (t.id == id) return &t;
  return nullptr;
}

PlanOption Instantiate(const KernelTemplate& t, const std::map<std::string, long long>& slots,
                       const std::string& task_stem, const std::string& about) {
  PlanOption o;
  o.space = "template";
  std::string label = t.id;
  std::vector<std::string> parts;
  Json js = Json::object();
  for (const auto& [k, v] : slots) {
    parts.push_back(fmt::format("{}={}", k.substr(5), v));  // without "KOPT_"
    js[k] = v;
  }
  if (!parts.empty()) label += "[" + fmt::format("{}", fmt::join(parts, ",")) + "]";
  o.label = label;
  o.about = about;
  o.candidate.kind = CandidateKind::kCuda;
  o.candidate.source = SetSlots(t.source, slots);
  o.candidate.name = task_stem + "[" + t.id + "]";
  o.detail = {{"space", "template"}, {"template", t.id}, {"slots", js}};
  return o;
}

/// Why replaying nodes [0, upto) would call a library the contract does
/// not allow (cuBLAS for matrix products, cuDNN for convolutions), or "".
std::string LibraryRefused(const OpGraph& g, const PlanInputs& in, std::size_t upto) {
  std::string refused;
  for (std::size_t i = 0; i < std::min(upto, g.nodes.size()); ++i) {
    const std::string& b = g.nodes[i].base;
    const char* lib = b.find("conv") != std::string::npos ? "cudnn"
                      : g.nodes[i].matrix                 ? "cublas"
                                                          : nullptr;
    if (lib && std::find(in.contract.libraries.begin(), in.contract.libraries.end(), lib) ==
                   in.contract.libraries.end())
      refused =
          fmt::format("{} would call {}, which the contract does not allow", g.nodes[i].op, lib);
  }
  return refused;
}

/// The first node k >= from (and >= 1) from which the rest of the graph
/// fuses into one kernel that pays (more than one elementwise op after the
/// library calls, which the contract must allow); nullopt, with `why` when
/// a library is refused, when there is none.
std::optional<std::pair<std::size_t, FusedKernel>> NextFusedTail(const OpGraph& g,
                                                                 const PlanInputs& in,
                                                                 std::size_t from,
                                                                 std::string* why) {
  for (std::size_t k = std::max<std::size_t>(1, from); k < g.nodes.size(); ++k) {
    int work = 0;
    for (std::size_t i = k; i < g.nodes.size(); ++i)
      work += kShapeOnly.count(g.nodes[i].base) ? 0 : 1;
    if (work < 1) break;
    FusionResult f = FuseTail(g, k);
    if (!f.kernel) continue;
    if (std::string refused = LibraryRefused(g, in, k); !refused.empty()) {
      *why = refused;
      break;
    }
    // One elementwise op after a library call is what PyTorch runs already.
    if (work < 2 && f.kernel->kind == "elementwise") break;
    return std::make_pair(k, std::move(*f.kernel));
  }
  return std::nullopt;
}

/// A tail with the group norms only it reads folded in
/// (GroupNormsIntoTail): their statistics run before it, their x * scale +
/// shift inside its one elementwise kernel. From `tail_from` when a tail
/// was found, else from the node after the last group norm (a norm
/// followed by one activation is a tail only once folded).
struct FoldedTail {
  OpGraph graph;
  std::size_t from = 0;
  FusedKernel kernel;
  int folded = 0;
};
std::optional<FoldedTail> FoldGroupNormsIntoTail(const OpGraph& g, const PlanInputs& in,
                                                 std::optional<std::size_t> tail_from) {
  std::size_t from = 0;
  if (tail_from) {
    from = *tail_from;
  } else {
    for (const GraphNode& n : g.nodes)
      if (n.base == "native_group_norm") from = static_cast<std::size_t>(n.index) + 1;
    if (from == 0 || from >= g.nodes.size()) return std::nullopt;
  }
  auto m = GroupNormsIntoTail(g, from);
  if (!m) return std::nullopt;
  FusionResult f = FuseTail(m->graph, m->tail_from);
  if (!f.kernel || f.kernel->kind != "elementwise" ||
      !LibraryRefused(m->graph, in, m->tail_from).empty())
    return std::nullopt;
  return FoldedTail{std::move(m->graph), m->tail_from, std::move(*f.kernel), m->folded};
}

/// The distinct op names of nodes [from, to), shape-only ones left out.
std::vector<std::string> OpNames(const OpGraph& g, std::size_t from, std::size_t to) {
  std::vector<std::string> v;
  for (std::size_t i = from; i < std::min(to, g.nodes.size()); ++i) {
    const std::string& b = g.nodes[i].base;
    if (kShapeOnly.count(b) || b == "t") continue;
    if (v.empty() || v.back() != b) v.push_back(b);
  }
  return v;
}

/// The ops before the longest fusable tail as PyTorch operators (library
/// calls), the tail as one generated kernel: a hybrid candidate.
std::optional<PlanOption> LibraryWithFusedTail(const OpGraph& g, const PlanInputs& in,
                                               std::vector<std::string>* notes) {
  if (in.task_source.empty()) return std::nullopt;
  if (!in.contract.torch_ops) {
    if (notes)
      notes->push_back("no library call with a fused tail: the contract forbids PyTorch operators");
    return std::nullopt;
  }
  std::string last_why;
  auto option = [&](std::size_t first, const std::string& src, const std::string& kind,
                    int folded) {
    auto prefix = OpNames(g, 0, first), tail = OpNames(g, first, g.nodes.size());
    if (folded) {
      // The norms' statistics stay before the kernel; their normalization is its first op.
      std::erase(prefix, "native_group_norm");
      tail.insert(tail.begin(), "native_group_norm");
      prefix.push_back("group-norm statistics");
    }
    PlanOption o;
    o.space = "library+fused";
    o.label = fmt::format("PyTorch {} + one kernel for {}", fmt::join(prefix, ", "),
                          fmt::join(tail, " -> "));
    o.about = fmt::format(
        "the library ops stay in PyTorch (cuBLAS/cuDNN); {} ({} ops) become one {} kernel, so "
        "their intermediates never round-trip DRAM{}",
        fmt::join(tail, " -> "), tail.size(), kind,
        folded ? fmt::format("; {} group norm(s) run as their statistics (one read), and the "
                             "kernel applies their scale and shift (no pass of their own)",
                             folded)
               : std::string());
    o.candidate.kind = CandidateKind::kHybrid;
    o.candidate.source = src;
    o.candidate.name = in.task_stem + "[library+fused]";
    o.detail = {{"space", "library+fused"},
                {"tail_from_node", first},
                {"fused_kind", kind},
                {"tail_ops", tail},
                {"tail_group_norms", folded}};
    return o;
  };
  for (std::size_t k = 1;;) {
    auto t = NextFusedTail(g, in, k, &last_why);
    if (!t) break;
    std::string why;
    if (t->second.kind == "elementwise")
      if (auto f = FoldGroupNormsIntoTail(g, in, t->first))
        if (auto src = HybridSource(f->graph, f->from, f->kernel, in.task_source, &why))
          return option(t->first, *src, f->kernel.kind, f->folded);
    auto src = HybridSource(g, t->first, t->second, in.task_source, &why);
    if (!src) {
      last_why = why;
      k = t->first + 1;
      continue;
    }
    return option(t->first, *src, t->second.kind, 0);
  }
  // A group norm and one elementwise op after it: a tail once folded.
  if (auto f = FoldGroupNormsIntoTail(g, in, std::nullopt);
      f && LibraryRefused(g, in, f->from).empty()) {
    std::string why;
    std::size_t first = f->from;  // in g: the node after the last group norm
    if (auto src = HybridSource(f->graph, f->from, f->kernel, in.task_source, &why))
      return option(first, *src, f->kernel.kind, f->folded);
  }
  if (notes && !last_why.empty())
    notes->push_back("no library call with a fused tail: " + last_why);
  return std::nullopt;
}

/// The whole forward as PyTorch operators, rewritten where an expert
/// would: 2-D convolutions in channels-last (NHWC) order, attention written out as one fused
/// scaled_dot_product_attention call, an activation before a max pool
/// after it; the longest fusable tail as one generated kernel where there
/// is one; on compute capability 9.0 the fp32 GEMMs as kopt's wgmma kernel.
/// A hybrid candidate whose knobs (CHANNELS_LAST, LAYOUT_KERNEL,
/// SDPA, POOL_FIRST, LT_EPILOGUE, GEMM_3XTF32, FUSED_TAIL)
/// let the tuner take each rewrite back.
std::optional<PlanOption> LibraryReplay(const OpGraph& g, const PlanInputs& in,
                                        std::vector<std::string>* notes) {
  if (in.task_source.empty() || !in.contract.torch_ops) return std::nullopt;
  ReplayOptions ro;
  if (const std::string why = WhyNotChannelsLast(g); why.empty()) {
    ro.channels_last = true;
  } else if (why.find("no 2-D convolution") == std::string::npos) {
    notes->push_back("no channels-last convolutions: " + why);
  }
  const auto attention = AttentionRegions(g);
  ro.sdpa = !attention.empty();
  const auto epilogues = LibraryEpilogues(g);
  const auto& libs = in.contract.libraries;
  ro.lt_epilogue =
      !epilogues.empty() && std::find(libs.begin(), libs.end(), "cublaslt") != libs.end();
  if (const KernelTemplate* t = FindTemplateById(in.templates, "layout/transpose_last2");
      t && ro.channels_last)
    ro.transpose_source = t->source;
  // kopt's BatchNorm kernel over the NHWC activations of a channels-last
  // replay or [N, C] rows (PyTorch's BatchNorm reads and writes in separate
  // passes, and the ReLU after it is one more).
  const auto bns = KernelBatchNorms(g);
  const bool rows_bn =
      std::any_of(bns.begin(), bns.end(), [](const KernelBatchNorm& k) { return k.rank == 2; });
  if (const KernelTemplate* t = FindTemplateById(in.templates, "norm/batch_norm_cl");
      t && (ro.channels_last || rows_bn) && !bns.empty())
    ro.bn_source = t->source;
  // kopt's NHWC max pool for the pools of a channels-last replay, with the
  // convolution's bias and the activation before it applied after the max
  // (PyTorch adds a convolution's bias in a pass of its own, runs the
  // activation in another, and its pool writes int64 indices).
  const auto pools = KernelPools(g);
  if (const KernelTemplate* t = FindTemplateById(in.templates, "pool/max_pool2d_nhwc");
      t && ro.channels_last && !pools.empty())
    ro.pool_source = t->source;
  // kopt's wgmma GEMM for the forward's fp32 GEMMs: sm_90a only.
  const auto gemms = KernelGemms(g);
  const int cc = ComputeCapability(in);
  if (const KernelTemplate* t = FindTemplateById(in.templates, "gemm/gemm_wgmma_3xtf32");
      t && cc == 90 && !gemms.empty())
    ro.gemm_source = t->source;
  if (!ro.channels_last && !ro.sdpa && !ro.lt_epilogue && ro.gemm_source.empty() &&
      ro.bn_source.empty())
    return std::nullopt;
  if (const std::string refused = LibraryRefused(g, in, g.nodes.size()); !refused.empty()) {
    notes->push_back("no library replay: " + refused);
    return std::nullopt;
  }
  ro.reuse_weights = in.contract.pre_transform_weights.value_or(false);
  ro.pool_first = true;
  // The adds and ReLUs the BatchNorm kernel would apply: a tail that takes
  // one of them is passed over (the kernel's own pass is the cheaper home:
  // a resnet block's BN -> + identity -> ReLU is then one pass, not two).
  std::optional<std::size_t> bn_fused_last;
  if (!ro.bn_source.empty())
    for (const KernelBatchNorm& k : bns)
      for (const auto& i : {k.add, k.act})
        if (i) bn_fused_last = std::max(bn_fused_last.value_or(0), *i);
  std::optional<std::pair<std::size_t, FusedKernel>> tail;
  std::optional<std::string> src;
  std::string why;
  for (std::size_t k = 1;;) {
    std::string refused;
    auto t = NextFusedTail(g, in, k, &refused);
    if (!t) break;
    if ((!bn_fused_last || t->first > *bn_fused_last) &&
        (src = ReplaySource(g, &t->second, t->first, in.task_source, ro, &why))) {
      tail = std::move(t);
      break;
    }
    k = t->first + 1;
  }
  if (!src) src = ReplaySource(g, nullptr, 0, in.task_source, ro, &why);
  if (!src) {
    notes->push_back("no library replay: " + why);
    return std::nullopt;
  }
  // Group norms only the elementwise tail reads: their statistics run
  // before it, their scale and shift inside it (PyTorch's group norm reads
  // its input twice and writes its output, which the tail reads again). A
  // group norm with one op after it is a tail only once folded.
  int folded_norms = 0;
  std::optional<FoldedTail> folded;
  if (!tail || tail->second.kind == "elementwise")
    folded = FoldGroupNormsIntoTail(g, in, tail ? std::optional(tail->first) : std::nullopt);
  if (folded && (!bn_fused_last || folded->from > *bn_fused_last)) {
    std::string why_folded;
    if (auto s = ReplaySource(folded->graph, &folded->kernel, folded->from, in.task_source, ro,
                              &why_folded)) {
      src = std::move(s);
      folded_norms = folded->folded;
      // Indices before the tail are the same in both graphs.
      tail = std::make_pair(folded->from, folded->kernel);
    }
  }
  if (!folded_norms) folded.reset();
  const OpGraph& tg = folded ? folded->graph : g;
  // The biases of the convolutions only the elementwise tail reads go into
  // the tail (PyTorch adds each in a pass of its own over the output).
  int moved_biases = 0;
  // The replay with the biases of the convolutions only nodes from `from`
  // on read (or the forward returns) moved into an elementwise tail there.
  auto move_biases = [&](std::size_t from) {
    auto m = ConvBiasesIntoTail(tg, from);
    if (!m) return false;
    FusionResult f = FuseTail(m->graph, m->tail_from);
    std::string why_moved;
    std::optional<std::string> moved;
    if (!f.kernel || f.kernel->kind != "elementwise" ||
        !(moved = ReplaySource(m->graph, &*f.kernel, m->tail_from, in.task_source, ro, &why_moved)))
      return false;
    src = std::move(moved);
    moved_biases = m->moved;
    return true;
  };
  if (tail && ro.channels_last && tail->second.kind == "elementwise") move_biases(tail->first);
  // No tail, and a convolution whose output the forward returns: its bias
  // becomes a tail of its own, one kernel that reads the NHWC output, adds
  // the bias and writes NCHW (PyTorch adds the bias in a pass of its own,
  // and the replay would convert the output back in another).
  const bool bias_tail = !tail && ro.channels_last && move_biases(tg.nodes.size());
  int convs = 0;
  for (const GraphNode& n : g.nodes) convs += n.base.find("conv") != std::string::npos ? 1 : 0;
  const bool pool_first = src->find("\nPOOL_FIRST = 1") != std::string::npos;
  auto tail_ops = tail ? OpNames(g, tail->first, g.nodes.size()) : std::vector<std::string>{};
  if (folded_norms) tail_ops.insert(tail_ops.begin(), "native_group_norm");
  if (bias_tail) tail_ops = {"add"};
  std::vector<std::string> what, why_pays;
  if (ro.channels_last) {
    what.push_back("convolutions channels-last");
    why_pays.push_back(fmt::format(
        "the {} convolution(s) run in NHWC, the layout cuDNN's tensor-core kernels read natively "
        "(no transposes around each call); the input and weights convert once, the output back "
        "to NCHW",
        convs));
  }
  if (ro.sdpa) {
    what.push_back("attention as scaled_dot_product_attention");
    const auto& a = attention.front();
    const auto& q = g.Value(a.q).shape;
    double score_mb = 4e-6;
    for (std::size_t i = 0; i + 1 < q.size(); ++i) score_mb *= static_cast<double>(q[i]);
    score_mb *= static_cast<double>(g.Value(a.k).shape[q.size() - 2]);
    why_pays.push_back(fmt::format(
        "{} attention region(s){} become one fused kernel that never writes the {:.0f} MB score "
        "matrix (matmul, scale, mask, softmax and matmul each read or write it today)",
        attention.size(), a.causal ? " (causal)" : "", score_mb));
  }
  if (ro.lt_epilogue) {
    what.push_back("GEMM bias + activation in cuBLASLt's epilogue");
    why_pays.push_back(fmt::format(
        "{} GEMM(s) apply their bias and activation as they write (_addmm_activation), so the "
        "activation's read and write of the GEMM's output go",
        epilogues.size()));
  }
  if (!ro.gemm_source.empty()) {
    int fused = 0;
    // An activation inside the fused tail stays the tail's (ReplaySource).
    for (const KernelGemm& k : gemms) fused += k.act && (!tail || *k.act < tail->first) ? 1 : 0;
    what.push_back("GEMMs as kopt's wgmma 3xTF32 kernel");
    why_pays.push_back(fmt::format(
        "{} fp32 GEMM(s) run on the tensor cores at fp32 accuracy (three TF32 products per "
        "multiply-add, ~2.3x cuBLAS's SIMT SGEMM on 4096^3 on an H100){}",
        gemms.size(),
        fused ? fmt::format(", {} with the activation applied as it stores", fused) : ""));
  }
  if (!ro.bn_source.empty()) {
    int adds = 0, relus = 0;
    for (const KernelBatchNorm& k : bns) {
      // An add or ReLU inside the fused tail stays the tail's (ReplaySource).
      const bool add = k.add && (!tail || *k.add < tail->first);
      adds += add ? 1 : 0;
      relus += k.act && (!tail || *k.act < tail->first) && (add || !k.add) ? 1 : 0;
    }
    what.push_back("BatchNorms as kopt's channels-last kernel");
    why_pays.push_back(fmt::format(
        "{} BatchNorm(s) in training mode run as kopt's NHWC kernel: statistics in one coalesced "
        "read, then one pass that applies scale and shift{}{}",
        bns.size(), adds ? fmt::format(", adds {} residual(s)", adds) : "",
        relus ? fmt::format(" and applies {} ReLU(s) as it stores", relus) : ""));
  }
  if (!ro.pool_source.empty()) {
    int biases = 0, acts = 0;
    for (const KernelPool& k : pools) {
      biases += k.conv ? 1 : 0;
      acts += k.act ? 1 : 0;
    }
    what.push_back("max pools as kopt's NHWC kernel");
    why_pays.push_back(fmt::format(
        "{} max pool(s) read the convolution's output once and write the pooled result{}{}, with "
        "no int64 indices",
        pools.size(),
        biases ? fmt::format(", adding {} convolution bias(es) after the max (no pass of its own)",
                             biases)
               : "",
        acts ? fmt::format(", applying {} activation(s) as they store", acts) : ""));
  }
  if (pool_first) {
    what.push_back("activations after max pools");
    why_pays.push_back("an activation before a max pool runs after it, on 1/k of the data");
  }
  PlanOption o;
  o.space = "library";
  o.label = fmt::format("PyTorch ops, {}", fmt::join(what, ", "));
  if (tail) o.label += fmt::format(" + one kernel for {}", fmt::join(tail_ops, " -> "));
  if (bias_tail) {
    o.label += " + one kernel for the convolution bias";
    why_pays.push_back(fmt::format(
        "{} returned convolution(s) run without their bias; one elementwise kernel adds it, "
        "reading the NHWC output as it is and writing NCHW (no bias pass, no conversion pass)",
        moved_biases));
  }
  if (tail) {
    // Over a 4-D shape in a channels-last replay the tail reads NHWC values
    // as they are and writes NCHW (Replay::Tail).
    const FusedKernel& k = tail->second;
    const bool nhwc = ro.channels_last && k.kind == "elementwise" && k.shape_input >= 0 &&
                      tg.Value(k.inputs[static_cast<std::size_t>(k.shape_input)]).shape.size() == 4;
    why_pays.push_back(fmt::format(
        "{} run as one {} kernel{}{}{}", fmt::join(tail_ops, " -> "), k.kind,
        folded_norms ? fmt::format(" that applies {} group norm(s) as a per-channel scale and "
                                   "shift (their statistics in one read before it)",
                                   folded_norms)
                     : std::string(),
        moved_biases ? fmt::format(" that also adds {} convolution bias(es) (no pass of their own)",
                                   moved_biases)
                     : std::string(),
        nhwc ? std::string(", reading NHWC values as they are and writing NCHW") : std::string()));
  }
  o.about = fmt::format("{}", fmt::join(why_pays, "; "));
  o.candidate.kind = CandidateKind::kHybrid;
  o.candidate.source = *src;
  o.candidate.name = in.task_stem + (ro.channels_last ? "[channels-last]" : "[library]");
  o.detail = {{"space", "library"},
              {"channels_last", ro.channels_last},
              {"attention", attention.size()},
              {"lt_epilogues", ro.lt_epilogue ? epilogues.size() : 0},
              {"kernel_gemms", ro.gemm_source.empty() ? 0 : gemms.size()},
              {"kernel_batch_norms", ro.bn_source.empty() ? 0 : bns.size()},
              {"kernel_pools", ro.pool_source.empty() ? 0 : pools.size()},
              {"pool_first", pool_first},
              {"convolutions", convs},
              {"reuse_weights", ro.reuse_weights},
              {"tail_ops", tail_ops},
              {"tail_conv_biases", moved_biases},
              {"bias_tail", bias_tail},
              {"tail_group_norms", folded_norms}};
  if (tail) {
    o.detail["tail_from_node"] = tail->first;
    o.detail["fused_kind"] = tail->second.kind;
  }
  return o;
}

/// The forward, or `base`'s hybrid, replayed from a CUDA graph: offered when
/// the reference is launch-bound (the GPU idles between its kernels for a
/// large share of the call). The estimate is the kernels' busy time plus a
/// stage latency per launch, which a graph replay still pays on the device.
void AddGraphed(const OpGraph& g, const PlanInputs& in, Plan* plan) {
  const TaskBundle& b = *in.bundle;
  if (in.task_source.empty() || !in.contract.torch_ops) {
    plan->notes.push_back(
        "no CUDA-graph replay: it runs PyTorch operators, so it needs the task's source and a "
        "contract that allows them");
    return;
  }
  if (const std::string why = WhyNotGraphed(g, in.contract); !why.empty()) {
    plan->notes.push_back("no CUDA-graph replay: " + why);
    return;
  }
  if (!b.eager_ms || b.eager_ms->median <= 0 || b.kernels.empty()) {
    plan->notes.push_back(
        "no CUDA-graph replay: capture did not time the reference's kernels, so launch overhead "
        "is unknown");
    return;
  }
  double busy = 0, launches = 0;
  for (const ReferenceKernel& k : b.kernels) {
    busy += k.device_ms;
    launches += k.calls;
  }
  const double eager = b.eager_ms->median;
  const double idle = std::max(0.0, eager - busy);
  if (launches < kGraphMinLaunches || idle < kGraphMinIdleShare * eager) {
    plan->notes.push_back(fmt::format(
        "no CUDA-graph replay: the reference is not launch-bound ({:.0f} launches, the GPU busy "
        "{:.0f}% of the call)",
        launches, 100 * std::min(1.0, busy / eager)));
    return;
  }
  const double est = busy + launches * kStageLatencyMs;
  // `base`: the hybrid replayed, or nullptr for the reference itself.
  auto make = [&](const PlanOption* base, const std::string& label, const std::string& what) {
    const std::string& source = base ? base->candidate.source : in.task_source;
    const std::string eager_class = base ? "ModelNew" : "Model";
    PlanOption o;
    o.space = "cuda-graph";
    o.label = label;
    o.about = fmt::format(
        "{} from one CUDA graph: the reference's {:.0f} launches leave the GPU idle {:.0f}% of "
        "the call, which a replay removes",
        what, launches, 100 * idle / eager);
    o.candidate.kind = CandidateKind::kHybrid;
    o.candidate.source = GraphedSource(source, eager_class);
    // "04_x[cuda-graph]", "04_x[cuda-graph+library+fused]"
    o.candidate.name = in.task_stem + "[cuda-graph" + (base ? "+" + base->space : "") + "]";
    o.detail = {{"space", "cuda-graph"},
                {"launches", launches},
                {"busy_ms", busy},
                {"eager_ms", eager},
                {"over", base ? base->space : "reference"}};
    o.est_ms = est;
    return o;
  };
  std::vector<PlanOption> add;
  for (const PlanOption& o : plan->options)
    if (o.space == "library+fused" || o.space == "library")
      add.push_back(make(&o, "CUDA graph over " + o.label, "the " + o.space + " hybrid replayed"));
  add.push_back(
      make(nullptr, "CUDA graph over the reference", "the reference's own operators replayed"));
  // They lead the plan unless another option is estimated faster.
  double best = 0;
  for (const PlanOption& o : plan->options)
    if (o.est_ms > 0 && (best == 0 || o.est_ms < best)) best = o.est_ms;
  const auto at = best == 0 || est < best ? plan->options.begin() : plan->options.end();
  plan->options.insert(at, std::make_move_iterator(add.begin()),
                       std::make_move_iterator(add.end()));
}

/// A matrix product as the first significant op (after transposes of its
/// operands): mm(A, B), mm(A, t(B)), bmm(A, B), addmm(bias, A, t(W)), with A
/// ABI input 0, B (or W) ABI input 1 and the bias ABI input 2.
struct MatmulMatch {
  const GraphNode* node = nullptr;
  std::size_t at = 0;  ///< its index in the significant ops
  bool trans_b = false, bias = false, batched = false;
};

std::optional<MatmulMatch> MatchMatmul(const OpGraph& g, const std::vector<const GraphNode*>& sig) {
  MatmulMatch m;
  for (; m.at < sig.size(); ++m.at)
    if (sig[m.at]->base != "t" && sig[m.at]->base != "transpose" && sig[m.at]->base != "permute") {
      m.node = sig[m.at];
      break;
    }
  const GraphNode* mm = m.node;
  if (!mm || (mm->base != "mm" && mm->base != "bmm" && mm->base != "addmm")) return std::nullopt;
  for (int v : mm->in)
    if (g.Value(v).dtype != "float32") return std::nullopt;
  std::size_t a_arg = 0, b_arg = 1;
  if (mm->base == "addmm") {
    m.bias = true;
    a_arg = 1;
    b_arg = 2;
    const Json* beta = OpGraph::Arg(*mm, 3, "beta");
    const Json* alpha = OpGraph::Arg(*mm, 4, "alpha");
    if ((beta && *beta != 1) || (alpha && *alpha != 1) || mm->in.empty() ||
        AbiOf(g, mm->in[0]) != 2 || g.Value(mm->in[0]).shape.size() != 1)
      return std::nullopt;
  }
  m.batched = mm->base == "bmm";
  if (mm->in.size() <= b_arg || AbiOf(g, mm->in[a_arg]) != 0) return std::nullopt;
  const int b = mm->in[b_arg];
  if (AbiOf(g, b) != 1) {
    // B through a transpose of the ABI input: the templates read it as [N, K].
    const GraphNode* p = g.Producer(b);
    const bool two_d = p && !p->in.empty() && g.Value(p->in[0]).shape.size() == 2;
    const Json* perm = p ? OpGraph::Arg(*p, 1) : nullptr;
    const bool transposed = two_d &&
                            (p->base == "t" || p->base == "transpose" ||
                             (p->base == "permute" && perm && *perm == Json::array({1, 0}))) &&
                            AbiOf(g, p->in[0]) == 1;
    if (!transposed) return std::nullopt;
    m.trans_b = true;
  }
  return m;
}

/// The ops from sig[from] to the end as a chain of at most: a constant
/// scale (mul or div by a positive number, in thousandths), ReLU or exact
/// GELU, a second constant scale; each op takes the previous one's output.
struct ScaleActTail {
  long long pre_x1000 = 1000, act = 0, post_x1000 = 1000;
};

std::optional<ScaleActTail> MatchScaleActTail(const OpGraph& g,
                                              const std::vector<const GraphNode*>& sig,
                                              std::size_t from) {
  ScaleActTail t;
  bool pre = false, post = false;
  for (std::size_t i = from; i < sig.size(); ++i) {
    const GraphNode& n = *sig[i];
    if (n.in.size() != 1 || (i > 0 && (sig[i - 1]->out.empty() || n.in[0] != sig[i - 1]->out[0])))
      return std::nullopt;
    if ((n.base == "relu" || n.base == "gelu") && t.act == 0 && !post) {
      const Json* ap = OpGraph::Arg(n, 1, "approximate");
      if (n.base == "gelu" && ap && *ap != "none") return std::nullopt;
      t.act = n.base == "relu" ? 1 : 2;
    } else if (n.base == "mul" || n.base == "div") {
      const Json* s = OpGraph::Arg(n, 1);
      double v = s && s->is_number() ? s->get<double>() : 0;
      if (n.base == "div" && v != 0) v = 1 / v;
      const double x1000 = v * 1000;
      if (!(v > 0) || std::abs(x1000 - std::round(x1000)) > 1e-9) return std::nullopt;
      bool& slot_used = t.act == 0 ? pre : post;
      if (slot_used) return std::nullopt;
      slot_used = true;
      (t.act == 0 ? t.pre_x1000 : t.post_x1000) = std::llround(x1000);
    } else {
      return std::nullopt;
    }
  }
  if (!sig.empty() && (sig.back()->out.empty() || g.outputs[0] != sig.back()->out[0]))
    return std::nullopt;
  return t;
}

/// A depthwise convolution as the first significant op: not transposed,
/// groups == in_channels, weight [C*M, 1, KH, KW], x ABI input 0, the weight
/// ABI input 1, the bias ABI input 2 or absent, all float32 and 4-D; then
/// nothing, or a relu (act 1) or relu6 / hardtanh(0, 6) / clamp(0, 6)
/// (act 2) that the forward returns.
struct DepthwiseConvMatch {
  long long kh = 0, kw = 0, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  long long mult = 1, bias = 0, act = 0;
};

std::optional<DepthwiseConvMatch> MatchDepthwiseConv(const OpGraph& g,
                                                     const std::vector<const GraphNode*>& sig) {
  if (sig.empty() || sig.size() > 2) return std::nullopt;
  const GraphNode& n = *sig[0];
  if ((n.base != "convolution" && n.base != "_convolution") || n.in.size() < 2 || n.in.size() > 3 ||
      n.out.empty())
    return std::nullopt;
  const GraphValue& x = g.Value(n.in[0]);
  const GraphValue& w = g.Value(n.in[1]);
  if (x.shape.size() != 4 || w.shape.size() != 4 || x.dtype != "float32" || w.dtype != "float32" ||
      AbiOf(g, n.in[0]) != 0 || AbiOf(g, n.in[1]) != 1)
    return std::nullopt;
  const Json* b = OpGraph::Arg(n, 2, "bias");
  DepthwiseConvMatch m;
  if (n.in.size() == 3) {
    const GraphValue& bv = g.Value(n.in[2]);
    if (!b || !b->is_object() || AbiOf(g, n.in[2]) != 2 || bv.dtype != "float32" ||
        bv.shape != std::vector<long long>{w.shape[0]})
      return std::nullopt;
    m.bias = 1;
  } else if (b && !b->is_null()) {
    return std::nullopt;
  }
  const Json* transposed = OpGraph::Arg(n, 6, "transposed");
  auto groups = IntArg(n, 8, "groups");
  const long long c = x.shape[1];
  if (!transposed || !transposed->is_boolean() || transposed->get<bool>() || !groups ||
      *groups != c || c <= 0 || w.shape[1] != 1 || w.shape[0] % c != 0 || w.shape[0] == 0)
    return std::nullopt;
  auto s = PairArg(n, 3, std::make_pair(1LL, 1LL));
  auto p = PairArg(n, 4, std::make_pair(0LL, 0LL));
  auto d = PairArg(n, 5, std::make_pair(1LL, 1LL));
  if (!s || !p || !d || s->first < 1 || s->second < 1 || p->first < 0 || p->second < 0 ||
      d->first < 1 || d->second < 1)
    return std::nullopt;
  m.kh = w.shape[2];
  m.kw = w.shape[3];
  m.sh = s->first;
  m.sw = s->second;
  m.ph = p->first;
  m.pw = p->second;
  m.dh = d->first;
  m.dw = d->second;
  m.mult = w.shape[0] / c;
  const GraphNode* last = &n;
  if (sig.size() == 2) {
    const GraphNode& a = *sig[1];
    auto number = [&](std::size_t i, const char* kw) -> std::optional<double> {
      const Json* v = OpGraph::Arg(a, i, kw);
      if (v && v->is_number()) return v->get<double>();
      return std::nullopt;
    };
    if (a.in.size() != 1 || a.in[0] != n.out[0] || a.out.empty()) return std::nullopt;
    if (a.base == "relu") {
      m.act = 1;
    } else if (a.base == "relu6") {
      m.act = 2;
    } else if (a.base == "hardtanh" || a.base == "clamp") {
      const auto lo = number(1, a.base == "clamp" ? "min" : "min_val");
      const auto hi = number(2, a.base == "clamp" ? "max" : "max_val");
      if (!lo || !hi || *lo != 0.0 || *hi != 6.0) return std::nullopt;
      m.act = 2;
    } else {
      return std::nullopt;
    }
    last = &a;
  }
  if (g.outputs[0] != last->out[0]) return std::nullopt;
  return m;
}

}  // namespace

std::optional<OpGraph> DiagonalProductsAsScales(const OpGraph& g) {
  OpGraph r = g;
  int rewritten = 0;
  for (GraphNode& mm : r.nodes) {
    if (mm.base != "mm" || mm.in.size() != 2 || mm.out.size() != 1) continue;
    for (std::size_t side = 0; side < 2; ++side) {
      const GraphNode* d = g.Producer(mm.in[side]);
      // torch.diag(v) reaches the dispatcher as diag (torch 1.x) or as
      // diag_embed(v, offset, dim1, dim2) (2.x).
      if (!d || (d->base != "diag" && d->base != "diag_embed") || d->in.size() != 1 ||
          d->out.size() != 1 || d->inplace)
        continue;
      const GraphValue& v = g.Value(d->in[0]);
      const GraphValue& dv = g.Value(d->out[0]);
      auto is = [&](std::size_t i, const char* kw, std::initializer_list<long long> ok) {
        const Json* a = OpGraph::Arg(*d, i, kw);
        if (!a || a->is_null()) return true;
        if (!a->is_number_integer()) return false;
        for (long long o : ok)
          if (a->get<long long>() == o) return true;
        return false;
      };
      const bool main = d->base == "diag" ? is(1, "diagonal", {0})
                                          : is(1, "offset", {0}) && is(2, "dim1", {0, -2}) &&
                                                is(3, "dim2", {1, -1});
      if (!main || v.shape.size() != 1 || dv.shape.size() != 2 || dv.shape[0] != v.shape[0] ||
          dv.shape[1] != v.shape[0] || g.IsOutput(d->out[0]) ||
          g.Consumers(d->out[0]).size() != 1 || v.dtype != dv.dtype ||
          g.Value(mm.in[1 - side]).dtype != v.dtype)
        continue;
      // diag(v) @ B scales B's rows by v; A @ diag(v) scales A's columns.
      const std::vector<long long> shape =
          side == 0 ? std::vector<long long>{v.shape[0], 1} : std::vector<long long>{1, v.shape[0]};
      GraphNode& view = r.nodes[static_cast<std::size_t>(d->index)];
      view.op = "aten::view";
      view.base = "view";
      view.args = Json::array({Json{{"v", v.id}}, shape});
      view.kwargs = Json::object();
      view.flops = 0;
      view.matrix = false;
      r.values[static_cast<std::size_t>(d->out[0])].shape = shape;
      mm.op = "aten::mul";
      mm.base = "mul";
      mm.args = Json::array({Json{{"v", mm.in[0]}}, Json{{"v", mm.in[1]}}});
      mm.kwargs = Json::object();
      mm.flops = static_cast<double>(g.Value(mm.out[0]).Numel());
      mm.matrix = false;
      ++rewritten;
      break;
    }
  }
  if (rewritten == 0) return std::nullopt;
  return r;
}

std::string WhyNotGraphed(const OpGraph& g, const Contract& c) {
  if (c.training.rfind("batch statistics", 0) == 0)
    return "BatchNorm in training mode updates its running buffers on every call";
  if (c.training.rfind("active dropout", 0) == 0) return "the forward draws random numbers";
  for (const GraphNode& n : g.nodes) {
    if (!n.inplace) continue;
    for (int v : n.in) {
      const GraphValue& gv = g.Value(v);
      if (gv.source == "abi")
        return fmt::format("{} writes {} {} in place", n.op, gv.role, gv.name);
    }
  }
  return "";
}

std::vector<PlanOption> MatchTemplates(const OpGraph& g,
                                       const std::vector<KernelTemplate>& templates,
                                       const std::string& task_stem,
                                       std::vector<std::string>* notes, int cc) {
  std::vector<PlanOption> out;
  const auto sig = Significant(g);
  if (sig.empty() || g.outputs.size() != 1) return out;
  std::vector<std::string> bases;
  for (const GraphNode* n : sig) bases.push_back(n->base);
  auto rank_of = [&](int id) { return static_cast<long long>(g.Value(id).shape.size()); };
  auto all_float = [&](const GraphNode& n) {
    for (int v : n.in)
      if (g.Value(v).dtype != "float32") return false;
    return true;
  };

  // Scans: cumsum or cumprod, flip-scan-flip, and the exclusive form of a
  // cumsum along the last dim (cumsum, drop the last, pad one zero in
  // front). Along the last dim the row template (cumsum only); along any
  // other the column template (each column a scan with stride inner).
  const KernelTemplate* last_t = FindTemplateById(templates, "scan/scan_lastdim");
  const KernelTemplate* strided_t = FindTemplateById(templates, "scan/scan_strided");
  if (last_t || strided_t) {
    const GraphNode* scan = nullptr;
    long long reverse = 0, exclusive = 0;
    auto scan_op = [](const std::string& b) { return b == "cumsum" || b == "cumprod"; };
    if (bases.size() == 1 && scan_op(bases[0])) scan = sig[0];
    if (bases.size() == 3 && bases[0] == "flip" && scan_op(bases[1]) && bases[2] == "flip") {
      const Json* d0 = OpGraph::Arg(*sig[0], 1, "dims");
      const Json* d2 = OpGraph::Arg(*sig[2], 1, "dims");
      auto c = IntArg(*sig[1], 1, "dim");
      const Json one = c ? Json::array({*c}) : Json();
      if (d0 && d2 && *d0 == one && *d2 == one) {
        scan = sig[1];
        reverse = 1;
      }
    }
    if (bases == std::vector<std::string>{"cumsum", "slice", "constant_pad_nd"}) {
      const Json* pad = OpGraph::Arg(*sig[2], 1);
      if (pad && *pad == Json::array({1, 0})) {
        scan = sig[0];
        exclusive = 1;
      }
    }
    // A dtype argument (the scan in another type) is not the templates'.
    const Json* dtype = scan ? OpGraph::Arg(*scan, 2, "dtype") : nullptr;
    if (scan && all_float(*scan) && (!dtype || dtype->is_null()) &&
        g.Value(scan->out[0]).dtype == "float32") {
      const long long rank = rank_of(scan->in[0]);
      auto dim = IntArg(*scan, 1, "dim");
      if (dim && *dim < 0) *dim += rank;
      const int src = AbiOf(g, reverse ? sig[0]->in[0] : scan->in[0]);
      const bool prod = scan->base == "cumprod";
      if (!dim || *dim < 0 || *dim >= rank || src != 0) {
        // not a scan of the input the templates read
      } else if (*dim == rank - 1 && last_t && !prod) {
        out.push_back(Instantiate(
            *last_t, {{"KOPT_REVERSE", reverse}, {"KOPT_EXCLUSIVE", exclusive}}, task_stem,
            "a scan along the last dim: block-wide scans with a running carry"));
      } else if (*dim < rank - 1 && strided_t && *dim <= 3 && !exclusive) {
        out.push_back(Instantiate(
            *strided_t,
            {{"KOPT_DIM", *dim},
             {"KOPT_OP", prod ? 1 : 0},
             {"KOPT_REVERSE", reverse},
             {"KOPT_EXCLUSIVE", 0}},
            task_stem,
            fmt::format("{} along dim {} (not the last): a thread per column slot, coalesced "
                        "across columns, chunks of rows joined by a decoupled look-back when the "
                        "columns alone would not fill the GPU",
                        scan->base, *dim)));
      } else if (notes) {
        notes->push_back(fmt::format("no scan template for {} along dim {} of a rank-{} tensor{}",
                                     scan->base, *dim, rank, exclusive ? " (exclusive)" : ""));
      }
    }
  }

  // One reduction over one dim.
  if (const KernelTemplate* t = FindTemplate(templates, "reduce"); t && sig.size() == 1) {
    static const std::map<std::string, long long> kOp = {{"sum", 0},    {"mean", 1},  {"max", 2},
                                                         {"min", 3},    {"amax", 4},  {"amin", 5},
                                                         {"argmax", 6}, {"argmin", 7}};
    const GraphNode& n = *sig[0];
    auto op = kOp.find(n.base);
    auto dim = IntArg(n, 1, "dim");
    const Json* dims = OpGraph::Arg(n, 1, "dim");
    const bool one_dim =
        dims && (dims->is_number_integer() || (dims->is_array() && dims->size() == 1));
    const bool values_only = n.base != "max" && n.base != "min" ? true : g.outputs[0] == n.out[0];
    if (op != kOp.end() && one_dim && dim && values_only && all_float(n) && AbiOf(g, n.in[0]) == 0)
      out.push_back(
          Instantiate(*t, {{"KOPT_DIM", *dim}, {"KOPT_OP", op->second}}, task_stem,
                      fmt::format("{} over dim {}: rows by warps, or columns split across blocks",
                                  n.base, *dim)));
  }

  // GroupNorm over [N, C, *spatial], with both affine parameters or neither.
  if (const KernelTemplate* t = FindTemplate(templates, "norm", "aten::native_group_norm");
      t && sig.size() == 1) {
    const GraphNode& n = *sig[0];
    const bool affine_ok =
        n.in.size() == 1 || (n.in.size() == 3 && AbiOf(g, n.in[1]) == 1 && AbiOf(g, n.in[2]) == 2);
    auto groups = IntArg(n, 6, "group");
    const Json* eps = OpGraph::Arg(n, 7, "eps");
    if (n.base == "native_group_norm" && !n.in.empty() && !n.out.empty() &&
        g.outputs[0] == n.out[0] && all_float(n) && AbiOf(g, n.in[0]) == 0 &&
        rank_of(n.in[0]) >= 2 && affine_ok && groups && *groups >= 1) {
      const double e = eps && eps->is_number() ? eps->get<double>() : 1e-5;
      out.push_back(Instantiate(
          *t, {{"KOPT_GROUPS", *groups}, {"KOPT_EPS_E12", std::llround(e * 1e12)}}, task_stem,
          fmt::format("group norm over {} groups: one block per sample and group, the "
                      "statistics in one read, then a channel-wise pass",
                      *groups)));
    }
  }

  // BatchNorm in training mode over [N, C, *spatial]: the batch's
  // statistics, and the running ones updated (with num_batches_tracked's
  // increment, a separate add_ in the graph) when the module tracks them.
  // A 2-D input [N, C] (BatchNorm1d) has its channels last: the
  // channels-last template reads its rows coalesced, where the NCHW one
  // would read each channel with a stride of C.
  {
    const KernelTemplate* t = FindTemplateById(templates, "norm/batch_norm");
    static const std::set<std::string> kBn = {"native_batch_norm", "_native_batch_norm_legit",
                                              "cudnn_batch_norm"};
    const GraphNode* bn = nullptr;
    const GraphNode* tracked = nullptr;
    bool other = false;
    for (const GraphNode* n : sig) {
      if (kBn.count(n->base) && !bn)
        bn = n;
      else if (n->base == "add" && n->inplace && !tracked)
        tracked = n;
      else if (n->base != "empty")
        other = true;
    }
    auto tensor_at = [&](const GraphNode& n, std::size_t i) -> std::optional<int> {
      const Json* a = OpGraph::Arg(n, i);
      if (!a || a->is_null()) return -1;  // absent
      if (a->is_object() && a->contains("v")) return AbiOf(g, a->at("v").get<int>());
      return std::nullopt;  // something else: not matched
    };
    if (bn && !other && !bn->in.empty() && !bn->out.empty() && g.outputs[0] == bn->out[0] &&
        AbiOf(g, bn->in[0]) == 0 && g.Value(bn->in[0]).dtype == "float32" &&
        rank_of(bn->in[0]) >= 2) {
      const bool training = BoolArg(*bn, 5, "training", false);
      const Json* momentum = OpGraph::Arg(*bn, 6, "momentum");
      const Json* eps = OpGraph::Arg(*bn, 7, "eps");
      auto w = tensor_at(*bn, 1), b = tensor_at(*bn, 2);
      auto rm = tensor_at(*bn, 3), rv = tensor_at(*bn, 4);
      const bool affine = w && b && *w == 1 && *b == 2;
      const bool plain = w && b && *w == -1 && *b == -1;
      const int first_buffer = affine ? 3 : 1;
      const bool running = rm && rv && *rm == first_buffer && *rv == first_buffer + 1;
      const bool untracked = rm && rv && *rm == -1 && *rv == -1;
      // num_batches_tracked += 1 on the buffer after the running statistics.
      bool tracked_ok = !tracked;
      if (tracked) {
        const Json* by = OpGraph::Arg(*tracked, 1);
        tracked_ok = !tracked->in.empty() && AbiOf(g, tracked->in[0]) == first_buffer + 2 &&
                     g.Value(tracked->in[0]).dtype == "int64" && by && by->is_number_integer() &&
                     by->get<long long>() == 1;
      }
      // A momentum of exactly 1 is what a module with momentum=None (a
      // cumulative average: 1 / num_batches_tracked) passes on its first
      // call; the captured value would be wrong on later calls.
      const bool momentum_ok = momentum && momentum->is_number() && momentum->get<double>() >= 0 &&
                               momentum->get<double>() < 1.0;
      const bool rows = rank_of(bn->in[0]) == 2;
      const KernelTemplate* rows_t = FindTemplateById(templates, "norm/batch_norm_cl");
      if (training && (affine || plain) && momentum_ok && tracked_ok &&
          ((running && tracked) || (untracked && !tracked)) && (rows ? rows_t : t)) {
        const double e = eps && eps->is_number() ? eps->get<double>() : 1e-5;
        std::map<std::string, long long> slots = {
            {"KOPT_AFFINE", affine ? 1 : 0},
            {"KOPT_EPS_E12", std::llround(e * 1e12)},
            {"KOPT_MOMENTUM_E12", std::llround(momentum->get<double>() * 1e12)}};
        if (rows) {
          slots["KOPT_RUNNING"] = running ? 1 : 0;
          slots["KOPT_TRACKED"] = running ? 1 : 0;
        }
        out.push_back(Instantiate(
            rows ? *rows_t : *t, slots, task_stem,
            rows ? "batch norm (training) over [N, C] rows: each thread owns a channel group "
                   "across rows (coalesced), the running statistics updated, then one "
                   "scale-and-shift pass"
                 : "batch norm (training): per-channel statistics split across blocks, the "
                   "running statistics updated, then one scale-and-shift pass"));
      } else if (notes && !training) {
        notes->push_back("the batch-norm template is for training mode (batch statistics)");
      }
    }
  }

  // A depthwise 2-D convolution (groups == in_channels, weight [C*M, 1, KH,
  // KW]), with an optional relu or relu6 (hardtanh 0..6) after it.
  if (const KernelTemplate* t = FindTemplate(templates, "conv", "aten::convolution");
      t && (sig.size() == 1 || sig.size() == 2)) {
    if (auto m = MatchDepthwiseConv(g, sig)) {
      out.push_back(Instantiate(
          *t,
          {{"KOPT_KH", m->kh},
           {"KOPT_KW", m->kw},
           {"KOPT_SH", m->sh},
           {"KOPT_SW", m->sw},
           {"KOPT_PH", m->ph},
           {"KOPT_PW", m->pw},
           {"KOPT_DH", m->dh},
           {"KOPT_DW", m->dw},
           {"KOPT_MULT", m->mult},
           {"KOPT_BIAS", m->bias},
           {"KOPT_EPILOGUE", m->act}},
          task_stem,
          "depthwise convolution: the input tile and its halo staged in shared memory, each "
          "input row read once for several output rows"));
    }
  }

  // Cross-entropy: log_softmax over the classes, then nll_loss without
  // class weights.
  if (const KernelTemplate* t = FindTemplate(templates, "loss");
      t && bases == std::vector<std::string>{"_log_softmax", "nll_loss_forward"}) {
    const GraphNode& ls = *sig[0];
    const GraphNode& nll = *sig[1];
    auto dim = IntArg(ls, 1, "dim");
    auto reduction = IntArg(nll, 3, "reduction");
    auto ignore = IntArg(nll, 4, "ignore_index");
    const Json* weight = OpGraph::Arg(nll, 2, "weight");
    const bool two_d = !ls.in.empty() && rank_of(ls.in[0]) == 2;
    if (two_d && dim && (*dim == 1 || *dim == -1) && reduction && *reduction >= 0 &&
        *reduction <= 2 && ignore && (!weight || weight->is_null()) && nll.in.size() == 2 &&
        nll.in[0] == ls.out[0] && all_float(ls) && AbiOf(g, ls.in[0]) == 0 &&
        AbiOf(g, nll.in[1]) == 1 && !nll.out.empty() && g.outputs[0] == nll.out[0])
      out.push_back(Instantiate(
          *t, {{"KOPT_REDUCTION", *reduction}, {"KOPT_IGNORE_INDEX", *ignore}}, task_stem,
          "cross-entropy: a warp per row with an online max and sum (one read of the logits), "
          "a deterministic sum of the rows' losses"));
  }

  // 2-D pooling.
  if (const KernelTemplate* t = FindTemplateById(templates, "pool/pool2d"); t && sig.size() == 1) {
    const GraphNode& n = *sig[0];
    const bool is_max = n.base == "max_pool2d_with_indices" || n.base == "max_pool2d";
    const bool is_avg = n.base == "avg_pool2d";
    if ((is_max || is_avg) && all_float(n) && AbiOf(g, n.in[0]) == 0 && rank_of(n.in[0]) == 4) {
      auto k = PairArg(n, 1, std::nullopt);
      auto s = PairArg(n, 2, k);
      auto p = PairArg(n, 3, std::make_pair(0LL, 0LL));
      bool ok = k && s && p;
      long long ceil = 0, include_pad = 1;
      if (is_max) {
        auto d = PairArg(n, 4, std::make_pair(1LL, 1LL));
        ok = ok && d && d->first == 1 && d->second == 1;
        ceil = BoolArg(n, 5, "ceil_mode", false);
      } else {
        ceil = BoolArg(n, 4, "ceil_mode", false);
        include_pad = BoolArg(n, 5, "count_include_pad", true);
        const Json* div = OpGraph::Arg(n, 6, "divisor_override");
        ok = ok && (!div || div->is_null());
      }
      if (ok)
        out.push_back(Instantiate(*t,
                                  {{"KOPT_MAX", is_max ? 1 : 0},
                                   {"KOPT_KH", k->first},
                                   {"KOPT_KW", k->second},
                                   {"KOPT_SH", s->first},
                                   {"KOPT_SW", s->second},
                                   {"KOPT_PH", p->first},
                                   {"KOPT_PW", p->second},
                                   {"KOPT_COUNT_INCLUDE_PAD", include_pad},
                                   {"KOPT_CEIL_MODE", ceil}},
                                  task_stem, "2-D pooling with coalesced window loads"));
      else if (notes)
        notes->push_back("the pooling template takes no dilation and no divisor override");
    }
  }

  // A GEMM, with its bias, one activation and one constant scale as the
  // epilogue: mm(A, B), mm(A, t(B)), bmm(A, B), addmm(bias, A, t(W)).
  const auto mm = MatchMatmul(g, sig);  // shared by the GEMM and the fold below
  if (const KernelTemplate* t = FindTemplateById(templates, "gemm/gemm_3xtf32")) {
    const auto tail = mm ? MatchScaleActTail(g, sig, mm->at + 1) : std::nullopt;
    // The template scales after its activation: a scale before it moves
    // past a ReLU (positive scales commute with it), not past a GELU.
    const bool ok = mm && tail && (tail->pre_x1000 == 1000 || tail->act != 2) &&
                    (tail->pre_x1000 == 1000 || tail->post_x1000 == 1000);
    if (ok) {
      const long long scale = tail->pre_x1000 != 1000 ? tail->pre_x1000 : tail->post_x1000;
      const std::map<std::string, long long> slots = {{"KOPT_TRANS_B", mm->trans_b ? 1 : 0},
                                                      {"KOPT_BATCHED", mm->batched ? 1 : 0},
                                                      {"KOPT_BIAS", mm->bias ? 1 : 0},
                                                      {"KOPT_EPILOGUE", tail->act},
                                                      {"KOPT_OUT_SCALE_X1000", scale}};
      // Hopper's warpgroup MMA first (2.3x eager on 4096^3 on an H100, the
      // mma.sync kernel 1.15x); the mma.sync kernel runs on any sm_80+.
      if (const KernelTemplate* w = FindTemplateById(templates, "gemm/gemm_wgmma_3xtf32");
          w && cc == 90)
        out.push_back(Instantiate(*w, slots, task_stem,
                                  "strict-fp32 GEMM on Hopper's warpgroup tensor cores (wgmma "
                                  "fed by TMA, 3xTF32 split planes) with the bias, activation "
                                  "and scale in its epilogue"));
      out.push_back(Instantiate(*t, slots, task_stem,
                                "strict-fp32 GEMM on tensor cores (3xTF32 split precision, "
                                "mma.sync) with the bias, activation and scale in its epilogue"));
    }
  }

  // A sum or mean over a GEMM's output features (its last dim) is linear:
  // folded into a column sum of the weight and a matrix-vector product.
  if (const KernelTemplate* t = FindTemplate(templates, "gemm", "aten::sum")) {
    const GraphNode* red =
        mm && !mm->batched && mm->at + 1 < sig.size() ? sig[mm->at + 1] : nullptr;
    bool ok = red && (red->base == "sum" || red->base == "mean") && red->in.size() == 1 &&
              red->in[0] == mm->node->out[0] && rank_of(red->in[0]) == 2 && all_float(*red);
    if (ok) {
      const Json* dims = OpGraph::Arg(*red, 1, "dim");
      const Json* dtype = OpGraph::Arg(*red, 3, "dtype");
      ok = dims && dims->is_array() && dims->size() == 1 && (*dims)[0].is_number_integer() &&
           ((*dims)[0].get<long long>() == 1 || (*dims)[0].get<long long>() == -1) &&
           (!dtype || dtype->is_null());
    }
    const auto tail = ok ? MatchScaleActTail(g, sig, mm->at + 2) : std::nullopt;
    if (ok && tail) {
      out.push_back(Instantiate(
          *t,
          {{"KOPT_TRANS_B", mm->trans_b ? 1 : 0},
           {"KOPT_BIAS", mm->bias ? 1 : 0},
           {"KOPT_MEAN", red->base == "mean" ? 1 : 0},
           {"KOPT_PRE_SCALE_X1000", tail->pre_x1000},
           {"KOPT_EPILOGUE", tail->act},
           {"KOPT_POST_SCALE_X1000", tail->post_x1000}},
          task_stem,
          "algebraic fold: the reduction over the GEMM's outputs becomes a column sum of the "
          "weight and a matrix-vector product, then the scale and activation"));
      // Fewer FLOPs than the reference algorithm: reading the inputs is its cost.
      out.back().detail["algebraic"] = true;
    }
  }
  return out;
}

Plan MakePlan(const PlanInputs& in) {
  Plan plan;
  std::optional<OpGraph> graph;
  if (in.bundle) {
    try {
      graph = OpGraphFromJson(in.bundle->graph);
    } catch (const std::exception& e) {
      plan.notes.push_back(std::string("the op graph could not be read: ") + e.what());
    }
  }
  const double floor = in.bundle ? in.bundle->floor_ms : 0;
  if (!graph) {
    plan.notes.push_back(
        "no op graph with dataflow was captured (it needs a capture by this kopt version), so only "
        "hand-written "
        "solutions are planned");
  } else {
    // Products by a diagonal matrix as the broadcast multiplies they are:
    // one elementwise kernel where the reference runs a GEMM.
    if (auto d = DiagonalProductsAsScales(*graph)) {
      FusionResult fd = FuseGraph(*d);
      if (fd.kernel) {
        PlanOption o;
        o.space = "fused";
        o.label = fmt::format("diagonal products as scales, fused {} kernel", fd.kernel->kind);
        o.about =
            "algebraic rewrite: a product by diag(v) scales the other operand's rows (or "
            "columns) by v, so the GEMM over a mostly-zero matrix becomes one pass over "
            "the operand; " +
            fd.kernel->about;
        o.candidate.kind = CandidateKind::kCuda;
        o.candidate.source = fd.kernel->source;
        o.candidate.name = in.task_stem + "[diag-scale]";
        o.detail = {{"space", "fused"},
                    {"fused_kind", fd.kernel->kind},
                    {"passes", fd.kernel->passes},
                    {"ops", fd.kernel->ops},
                    {"algebraic", true}};
        const double hard_floor = in.bundle ? in.bundle->hard_floor_ms : 0;
        o.est_ms = hard_floor > 0 ? hard_floor * 1.3 : 0;
        plan.options.push_back(std::move(o));
      } else {
        plan.notes.push_back("no kernel for the diagonal products as scales: " + fd.why_not);
      }
    }
    FusionResult f = FuseGraph(*graph);
    std::optional<PlanOption> column;  // offered after the templates (below)
    if (f.kernel) {
      PlanOption o;
      o.space = "fused";
      o.label = fmt::format("fused {} kernel", f.kernel->kind);
      o.about = f.kernel->about;
      o.candidate.kind = CandidateKind::kCuda;
      o.candidate.source = f.kernel->source;
      o.candidate.name = in.task_stem + "[fused]";
      o.detail = {{"space", "fused"},
                  {"fused_kind", f.kernel->kind},
                  {"passes", f.kernel->passes},
                  {"ops", f.kernel->ops}};
      // One DRAM read per input: the floor, plus re-reads from L2 for extra passes.
      o.est_ms = floor > 0 ? floor * (1.0 + 0.1 * (f.kernel->passes - 1)) : 0;
      if (f.kernel->kind == "column") {
        // A few threads per line: with few lines too few loads are in
        // flight to fill DRAM's pipe (Little's law: ~720k floats in flight
        // on an H200, 4 per thread at UNROLL 4), and its passes re-read the
        // line. A template matched to the same reduction goes first.
        const double threads = static_cast<double>(f.kernel->lines) * std::max(1, f.kernel->split);
        const double fill = threads > 0 ? std::clamp(720e3 / (4 * threads), 1.0, 16.0) : 1.0;
        o.est_ms = floor > 0 ? floor * (1.0 + 0.5 * (f.kernel->passes - 1)) * fill : 0;
        column = std::move(o);
      } else {
        plan.options.push_back(std::move(o));
      }
    } else {
      plan.notes.push_back("no single fused kernel: " + f.why_not);
      // The expert's library rewrites first (convolutions in NHWC, where
      // cuDNN's TF32 tensor-core kernels need no transposes; fused
      // attention), then the plain replay with a fused tail.
      if (auto o = LibraryReplay(*graph, in, &plan.notes)) plan.options.push_back(std::move(*o));
      if (auto o = LibraryWithFusedTail(*graph, in, &plan.notes))
        plan.options.push_back(std::move(*o));
    }
    const double hard_floor = in.bundle ? in.bundle->hard_floor_ms : 0;
    for (PlanOption& o :
         MatchTemplates(*graph, in.templates, in.task_stem, &plan.notes, ComputeCapability(in))) {
      if (o.detail.value("algebraic", false))
        o.est_ms = hard_floor > 0 ? hard_floor * 1.3 : (floor > 0 ? floor * 0.1 : 0);
      else
        o.est_ms = floor > 0 ? floor * 1.2 : 0;
      plan.options.push_back(std::move(o));
    }
    if (column) plan.options.push_back(std::move(*column));
    AddGraphed(*graph, in, &plan);
    // An algebraic rewrite that removes most of the reference's FLOPs is the
    // best bet whatever else is offered: it goes first.
    std::stable_partition(plan.options.begin(), plan.options.end(),
                          [](const PlanOption& o) { return o.detail.value("algebraic", false); });
  }
  for (const Candidate& c : in.shipped) {
    if (c.kind == CandidateKind::kHybrid && !in.contract.torch_ops) {
      plan.notes.push_back(c.name + " is a PyTorch hybrid, which the contract forbids");
      continue;
    }
    PlanOption o;
    o.space = "hand-written";
    o.label = c.name;
    o.about = "the task's shipped solution";
    o.candidate = c;
    o.detail = {{"space", "hand-written"}, {"file", c.path.filename().string()}};
    plan.options.push_back(std::move(o));
  }
  if (plan.options.empty())
    plan.notes.push_back(
        "nothing in the plan: the search keeps the reference (PyTorch) unless --from is given");
  return plan;
}

}  // namespace kopt
