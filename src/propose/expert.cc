#include "propose/expert.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "plan/hybrid.h"
#include "plan/planner.h"
#include "propose/knobs.h"
#include "propose/memory_query.h"
#include "propose/tuner.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

struct MoveRule {
  std::vector<std::string> knobs;
  int dir = 1;
};

std::map<std::string, std::vector<MoveRule>> LoadMoves(const std::filesystem::path& file) {
  std::map<std::string, std::vector<MoveRule>> out;
  if (file.empty() || !std::filesystem::exists(file)) return out;
  const Json j = ReadJsonFile(file);
  try {
    for (const auto& [name, rules] : j.at("moves").items())
      for (const Json& r : rules)
        out[name].push_back(
            {r.at("knobs").get<std::vector<std::string>>(), r.at("dir").get<int>()});
  } catch (const Json::exception& e) {
    throw Error(file.string() + " is malformed (" + e.what() +
                "): each move maps to [{\"knobs\": [...], \"dir\": 1}].");
  }
  return out;
}

std::string Shorten(const std::string& s, std::size_t n) {
  if (s.size() <= n) return s;
  std::size_t cut = s.rfind(' ', n);
  return s.substr(0, cut == std::string::npos ? n : cut) + "...";
}

class ExpertProposer : public Proposer {
 public:
  explicit ExpertProposer(ProposerOptions options) : options_(std::move(options)) {}

  std::string Name() const override { return "expert"; }
  bool WantsDiagnoses() const override { return true; }

  void Begin(const ProposeContext& context) override {
    context_ = context;
    next_option_ = 0;
    seen_.clear();
    notes_.clear();
    moves_ = LoadMoves(options_.moves_file);
    PlanInputs in;
    in.bundle = context.bundle;
    in.contract = context.contract;
    in.task_stem = context.task.path.stem().string();
    if (!context.task.path.empty() && std::filesystem::exists(context.task.path))
      in.task_source = ReadTextFile(context.task.path);
    if (options_.shipped_solutions) in.shipped = FindSolutions(context.task);
    in.templates = LoadTemplates(options_.kernels_dir);
    plan_ = MakePlan(in);
    graph_why_not_ = !in.contract.torch_ops ? "the contract forbids PyTorch operators" : "";
    if (graph_why_not_.empty() && context.bundle) {
      try {
        const auto g = OpGraphFromJson(context.bundle->graph);
        graph_why_not_ = g ? WhyNotGraphed(*g, in.contract) : "no op graph was captured";
      } catch (const std::exception&) {
        graph_why_not_ = "the op graph could not be read";
      }
    }
    // The knob tuner refines whatever option the search picks (it reads each
    // parent's own knob lines); wide moves at the first two levels.
    TunerOptions to = options_.tuner;
    to.wide_depth = std::max(to.wide_depth, 2);
    tuner_ = MakeTuneProposer(to);
    ProposeContext tc = context;
    if (!tc.from) {
      for (const PlanOption& o : plan_.options)
        if (!KnobSpace::Parse(o.candidate.source, o.candidate.name).empty()) {
          tc.from = o.candidate;
          break;
        }
    }
    try {
      if (tc.from)
        tuner_->Begin(tc);
      else
        tuner_.reset();
    } catch (const Error&) {
      tuner_.reset();  // a --from kernel without knobs: the plan and the diagnoses still work
    }
    // Long-term memory: which entries match this task (what an expert would
    // recall before starting; the LLM proposer puts them in its prompts), and
    // measured wins of plan options on tasks of the same class, which move
    // those options ahead of the planner's estimates.
    if (!options_.knowledge_db.empty()) {
      std::string why;
      if (auto kb = OpenProposerMemory(options_, &why)) {
        try {
          std::vector<std::string> ids;
          for (const KnowledgeEntry& e : kb->Retrieve(MemoryQuery(context, {}, 3)))
            ids.push_back(e.origin == "learned" ? fmt::format("{} ({:.2f}x)", e.id, e.gain) : e.id);
          if (!ids.empty()) notes_.push_back("memory: " + fmt::format("{}", fmt::join(ids, ", ")));
          KnowledgeQuery learned = MemoryQuery(context, {}, 20);
          learned.text.clear();
          for (const auto& n : PreferLearnedPlanOptions(kb->Retrieve(learned), &plan_.options))
            notes_.push_back("memory: " + n);
        } catch (const Error& e) {
          notes_.push_back(std::string("memory: ") + e.what());
        }
      } else {
        notes_.push_back("memory: " + why);
      }
    }
    const double eager =
        context.bundle && context.bundle->eager_ms ? context.bundle->eager_ms->median : 0;
    for (std::size_t i = 0; i < plan_.options.size(); ++i) {
      const PlanOption& o = plan_.options[i];
      std::string est;
      if (o.est_ms > 0 && eager > 0)
        est = fmt::format(" (estimate {:.3f} ms, eager {:.3f} ms)", o.est_ms, eager);
      notes_.push_back(
          fmt::format("plan {}: {} [{}]: {}{}", i + 1, o.label, o.space, o.about, est));
    }
    for (const auto& n : plan_.notes) notes_.push_back("plan: " + n);
    if (moves_.empty())
      notes_.push_back("no diagnosis-to-move table was found, so moves come from the tuner only");
  }

  std::optional<Proposal> Root() override {
    if (!context_.from) return std::nullopt;  // the reference is the root; the plan is its children
    Proposal p;
    p.parent = -1;
    p.move = "start from " + context_.from->name;
    p.candidate = *context_.from;
    p.proposer = Name();
    p.detail = {{"space", "from"}};
    seen_.insert(ContentHash({p.candidate.source}));
    return p;
  }

  std::vector<Proposal> Propose(const ParentView& parent, int n) override {
    std::vector<Proposal> out;
    if (n <= 0) return out;
    // The first level: the plan's options, best first.
    if (!parent.candidate || (context_.from && parent.depth == 0)) {
      while (static_cast<int>(out.size()) < n && next_option_ < plan_.options.size()) {
        const PlanOption& o = plan_.options[next_option_++];
        if (!seen_.insert(ContentHash({o.candidate.source})).second) continue;
        Proposal p;
        p.parent = parent.node;
        p.move = "plan: " + o.label;
        p.candidate = o.candidate;
        p.expected = o.about;
        p.proposer = Name();
        p.detail = o.detail;
        out.push_back(std::move(p));
      }
      if (!parent.candidate) return out;
    }
    // Moves the node's diagnoses call for, largest call gain first.
    if (parent.candidate) {
      std::vector<Diagnosis> ds = parent.diagnoses;
      SortByCallGain(&ds);
      for (const Diagnosis& d : ds) {
        if (static_cast<int>(out.size()) >= n) break;
        for (const std::string& m : d.suggested_moves) {
          if (static_cast<int>(out.size()) >= n) break;
          auto p = m == "cuda_graph" ? GraphMove(parent, d) : DiagnosisMove(parent, d, m);
          if (p) out.push_back(std::move(*p));
        }
      }
    }
    // Then the tuner's neighbours and wide moves.
    if (tuner_ && parent.candidate && static_cast<int>(out.size()) < n) {
      for (Proposal& p : tuner_->Propose(parent, n - static_cast<int>(out.size()))) {
        if (!seen_.insert(ContentHash({p.candidate.source})).second) continue;
        p.proposer = Name();
        out.push_back(std::move(p));
      }
    }
    return out;
  }

  std::vector<std::string> Notes() const override { return notes_; }

 private:
  /// A launch-bound hybrid (PyTorch operators with or without its own
  /// kernels) replayed from a CUDA graph, when its forward writes no state.
  std::optional<Proposal> GraphMove(const ParentView& parent, const Diagnosis& d) {
    const Candidate& c = *parent.candidate;
    if (c.kind != CandidateKind::kHybrid || !graph_why_not_.empty() ||
        c.source.find("_KoptEager = ") != std::string::npos ||
        c.source.find("class ModelNew") == std::string::npos)
      return std::nullopt;
    const std::string mv = fmt::format("replay from a CUDA graph (for {}: cuda_graph)", d.tool);
    if (std::find(parent.tried_moves.begin(), parent.tried_moves.end(), mv) !=
        parent.tried_moves.end())
      return std::nullopt;
    Proposal p;
    p.parent = parent.node;
    p.candidate = c;
    p.candidate.source = GraphedSource(c.source, "ModelNew");
    if (!seen_.insert(ContentHash({p.candidate.source})).second) return std::nullopt;
    p.candidate.name = StemName(c.name) + "[cuda-graph]";
    p.move = mv;
    p.expected = Shorten(d.advice, 160);
    p.proposer = Name();
    p.detail = {{"space", "diagnosis"}, {"diagnosis", d.tool}, {"suggested_move", "cuda_graph"}};
    return p;
  }

  std::optional<Proposal> DiagnosisMove(const ParentView& parent, const Diagnosis& d,
                                        const std::string& move) {
    auto rules = moves_.find(move);
    if (rules == moves_.end()) return std::nullopt;
    KnobSpace space;
    try {
      space = KnobSpace::Parse(parent.candidate->source, parent.candidate->name);
    } catch (const Error&) {
      return std::nullopt;
    }
    if (space.empty()) return std::nullopt;
    const KnobConfig current = space.Defaults();
    for (const MoveRule& r : rules->second) {
      for (const std::string& name : r.knobs) {
        const Knob* k = space.Find(name);
        if (!k) continue;
        auto at = std::find(k->values.begin(), k->values.end(), current.at(name));
        if (at == k->values.end()) continue;
        // Step to the nearest value in the direction that the constraints allow.
        for (auto it = at;;) {
          if (r.dir > 0) {
            if (++it == k->values.end()) break;
          } else {
            if (it == k->values.begin()) break;
            --it;
          }
          KnobConfig next = current;
          next[name] = *it;
          if (!space.Valid(next)) continue;
          const std::string text = fmt::format("{} {} -> {}", name, current.at(name), *it);
          const std::string mv = fmt::format("{} (for {}: {})", text, d.tool, move);
          if (std::find(parent.tried_moves.begin(), parent.tried_moves.end(), mv) !=
              parent.tried_moves.end())
            break;
          Proposal p;
          p.parent = parent.node;
          p.candidate = *parent.candidate;
          p.candidate.source = space.Apply(next);
          if (!seen_.insert(ContentHash({p.candidate.source})).second) break;
          p.candidate.name = StemName(parent.candidate->name) + "[" + space.Describe(next) + "]";
          p.move = mv;
          p.expected = Shorten(d.advice, 160);
          p.proposer = Name();
          p.detail = {{"space", "diagnosis"}, {"diagnosis", d.tool},      {"suggested_move", move},
                      {"knob", name},         {"from", current.at(name)}, {"to", *it}};
          return p;
        }
      }
    }
    return std::nullopt;
  }

  static std::string StemName(const std::string& name) { return name.substr(0, name.find('[')); }

  ProposerOptions options_;
  ProposeContext context_;
  Plan plan_;
  std::size_t next_option_ = 0;
  std::set<std::string> seen_;
  std::vector<std::string> notes_;
  std::map<std::string, std::vector<MoveRule>> moves_;
  std::string graph_why_not_;  ///< why no candidate may be replayed from a graph; "" when one may
  std::unique_ptr<Proposer> tuner_;
};

}  // namespace

namespace {

// "reduce/reduce_dim[DIM=1,OP=0]" -> "reduce/reduce_dim": a plan option's
// label without its knob values.
std::string LabelStem(const std::string& label) { return label.substr(0, label.find('[')); }

}  // namespace

std::vector<std::string> PreferLearnedPlanOptions(const std::vector<KnowledgeEntry>& entries,
                                                  std::vector<PlanOption>* options) {
  std::vector<std::string> notes;
  std::vector<std::pair<double, const KnowledgeEntry*>> best(options->size(), {0.0, nullptr});
  for (const KnowledgeEntry& e : entries) {
    if (e.origin != "learned" || !e.provenance.is_object()) continue;
    const std::string move = e.provenance.value("move", std::string());
    if (move.rfind("plan: ", 0) != 0) continue;
    const std::string stem = LabelStem(move.substr(6));
    for (std::size_t i = 0; i < options->size(); ++i)
      if (LabelStem((*options)[i].label) == stem && e.gain > best[i].first) best[i] = {e.gain, &e};
  }
  std::vector<std::size_t> order(options->size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return best[a].first > best[b].first; });
  std::vector<PlanOption> sorted;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t i = order[k];
    if (best[i].second && k < i)
      notes.push_back(
          fmt::format("plan option '{}' moved from {} to {}: {} won {:.2f}x with it on {}",
                      (*options)[i].label, i + 1, k + 1, best[i].second->id, best[i].first,
                      best[i].second->provenance.value("task", std::string("a task"))));
    sorted.push_back(std::move((*options)[i]));
  }
  *options = std::move(sorted);
  return notes;
}

std::unique_ptr<Proposer> MakeExpertProposer(const ProposerOptions& options) {
  return std::make_unique<ExpertProposer>(options);
}

}  // namespace kopt
