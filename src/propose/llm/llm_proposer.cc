#include "propose/llm/llm_proposer.h"

#include <algorithm>
#include <cctype>
#include <future>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "memory/trajectory.h"
#include "plan/planner.h"
#include "propose/llm/client.h"
#include "propose/llm/extract.h"
#include "propose/llm/prompt.h"
#include "propose/llm/tools.h"
#include "propose/memory_query.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

bool Repairable(const Outcome& o) {
  return std::holds_alternative<BuildFailed>(o) || std::holds_alternative<Incorrect>(o) ||
         std::holds_alternative<Crashed>(o);
}

std::string OneLine(const std::string& s, std::size_t n) {
  std::string t = s.substr(0, s.find('\n'));
  if (t.size() > n) t = t.substr(0, n) + "...";
  return t;
}

/// The reason a failed outcome gives, on one line (the trajectory's).
std::string Reason(const Outcome& o) {
  if (const auto* b = std::get_if<BuildFailed>(&o)) return OneLine(BuildFailureReason(b->log), 200);
  if (const auto* i = std::get_if<Incorrect>(&o))
    return i->reasons.empty() ? "incorrect" : OneLine(i->reasons.front(), 200);
  if (const auto* c = std::get_if<Crashed>(&o)) return OneLine(c->kind + ": " + c->message, 200);
  if (const auto* t = std::get_if<TimedOut>(&o))
    return fmt::format("timed out in {} after {:.0f} s", t->phase, t->after_s);
  return "";
}

/// What the reply says its change does: the first prose line that is not
/// the Move line, before the first fence.
std::string Expected(const std::string& reply) {
  std::size_t fence = reply.find("```");
  std::string prose = reply.substr(0, fence);
  std::size_t pos = 0;
  while (pos < prose.size()) {
    std::size_t e = prose.find('\n', pos);
    if (e == std::string::npos) e = prose.size();
    std::string line = prose.substr(pos, e - pos);
    line.erase(0, line.find_first_not_of(" \t*#"));
    std::string lower = line;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!line.empty() && lower.rfind("move", 0) != 0) return OneLine(line, 200);
    pos = e + 1;
  }
  return "";
}

struct Pending {
  int node = 0;
  Proposal proposal;
  Outcome outcome;
};

/// One request to send: its prompt and what went into it.
struct Ask {
  std::string kind;  ///< "improve" or "repair"
  int repair_of = -1;
  int repair_round = 0;
  std::string base_move;  ///< repairs: the move being repaired
  RenderedPrompt prompt;
  std::vector<std::string> diagnoses;  ///< tool names in the prompt
  std::vector<std::string> memory;     ///< entry ids in the prompt
};

class LlmProposer : public Proposer {
 public:
  explicit LlmProposer(ProposerOptions options) : options_(std::move(options)) {}

  std::string Name() const override { return "llm"; }
  bool WantsDiagnoses() const override { return true; }

  void Begin(const ProposeContext& context) override {
    context_ = context;
    notes_.clear();
    pending_.clear();
    seen_.clear();
    fruitless_.clear();
    trajectory_ = Trajectory();
    config_ = LlmConfigFromEnv(options_.llm);
    if (config_.provider.empty() || config_.model.empty())
      throw Error(
          "no model is configured for --proposer llm: set KOPT_LLM and OPENAI_API_KEY, or pass "
          "--llm provider:model (with --llm-base-url for a local server).");
    templates_ = LoadPromptTemplates(options_.prompts_dir);
    fs::path cache = options_.cache_dir.empty() ? DefaultCacheDir() : options_.cache_dir;
    client_ = std::make_unique<LlmClient>(MakeLlmProvider(config_), config_, cache / "llm",
                                          context.budget);
    notes_.push_back(fmt::format("model {}:{}", config_.provider, config_.model));
    std::string why;
    memory_ = OpenProposerMemory(options_, &why);
    if (!memory_) notes_.push_back("no long-term memory in the prompts: " + why);
    cutlass_.reset();
    std::string python = options_.python.empty() ? "python3" : options_.python;
    if (auto dir = FindCutlassInclude(options_.cutlass_dir, python, &why)) {
      cutlass_ = std::make_unique<CutlassTree>(*dir);
      notes_.push_back("the model may search and read the CUTLASS tree " + dir->string());
    } else if (!options_.cutlass_dir.empty()) {
      throw Error(why + ".");
    } else {
      notes_.push_back(why);
    }
    toolbox_ = std::make_unique<LlmToolbox>(cutlass_.get(), memory_.get());
    task_source_.clear();
    if (!context.task.path.empty() && fs::exists(context.task.path))
      task_source_ = ReadTextFile(context.task.path);
    plan_ = Plan();
    try {
      PlanInputs in;
      in.bundle = context.bundle;
      in.contract = context.contract;
      in.task_stem = context.task.path.stem().string();
      in.task_source = task_source_;
      in.shipped = FindSolutions(context.task);
      in.templates = LoadTemplates(options_.kernels_dir);
      plan_ = MakePlan(in);
    } catch (const Error& e) {
      notes_.push_back(std::string("the prompts carry no plan: ") + e.what());
    }
  }

  std::optional<Proposal> Root() override {
    if (!context_.from) return std::nullopt;  // the reference is the root
    Proposal p;
    p.parent = -1;
    p.move = "start from " + context_.from->name;
    p.candidate = *context_.from;
    p.proposer = Name();
    p.detail = {{"space", "from"}};
    seen_.insert(ContentHash({p.candidate.source}));
    return p;
  }

  void Observe(int node, const Proposal& p, const Outcome& outcome) override {
    TrajectoryStep s;
    s.node = node;
    s.parent = p.parent;
    s.move = p.move;
    s.proposer = p.proposer;
    s.outcome = OutcomeName(outcome);
    s.reason = Reason(outcome);
    if (const auto* m = std::get_if<Measured>(&outcome))
      s.speedup = (context_.bundle ? SpeedupVsEager(*m, *context_.bundle) : m->SpeedupVsEager())
                      .value_or(0);
    trajectory_.Add(s);
    observed_.insert(node);
    if (p.proposer == Name() && Repairable(outcome) && RoundOf(p.detail) < options_.repair_cap &&
        p.parent >= 0)
      pending_[p.parent].push_back({node, p, outcome});
  }

  std::vector<Proposal> Propose(const ParentView& parent, int n) override {
    std::vector<Proposal> out;
    if (n <= 0 || !client_) return out;
    // The parent as the trajectory knows it (a node observed before this
    // proposer existed, on resume).
    if (parent.outcome && !observed_.count(parent.node) && parent.candidate) {
      TrajectoryStep s;
      s.node = parent.node;
      s.parent = parent.detail.value("parent", -1);
      s.move = parent.detail.value("move", std::string());
      s.proposer = Name();
      s.outcome = OutcomeName(*parent.outcome);
      s.reason = Reason(*parent.outcome);
      if (!parent.diagnoses.empty()) s.diagnosis = parent.diagnoses.front().tool;
      trajectory_.Add(s);
      observed_.insert(parent.node);
    }
    std::vector<Ask> asks;
    // A failed parent handed to us directly: repair it.
    if (parent.candidate && parent.outcome && Repairable(*parent.outcome) &&
        RoundOf(parent.detail) < options_.repair_cap && !repaired_.count(parent.node)) {
      repaired_.insert(parent.node);
      asks.push_back(RepairAsk(parent.node, *parent.candidate, *parent.outcome,
                               RoundOf(parent.detail) + 1,
                               parent.detail.value("move", std::string())));
    }
    // Children of this parent that failed: each repaired once per round.
    auto& pend = pending_[parent.node];
    while (static_cast<int>(asks.size()) < n && !pend.empty()) {
      Pending f = pend.front();
      pend.erase(pend.begin());
      if (!repaired_.insert(f.node).second) continue;
      asks.push_back(RepairAsk(f.node, f.proposal.candidate, f.outcome,
                               RoundOf(f.proposal.detail) + 1, f.proposal.move));
    }
    // New ideas, unless this parent gave nothing usable several times.
    for (int k = 0; static_cast<int>(asks.size()) < n && fruitless_[parent.node] < 3; ++k)
      asks.push_back(ImproveAsk(parent, k, n));
    if (asks.empty()) return out;

    // Several requests in flight; each may call tools first.
    std::vector<std::future<ToolLoopResult>> replies;
    for (const Ask& a : asks) {
      LlmRequest req;
      req.model = config_.model;
      req.messages.push_back({"system", templates_.system, {}, ""});
      req.messages.push_back({"user", a.prompt.text, {}, ""});
      LlmClient* client = client_.get();
      LlmToolbox* tools = toolbox_->Tools().empty() ? nullptr : toolbox_.get();
      int rounds = options_.tool_rounds;
      replies.push_back(std::async(std::launch::async, [client, req, tools, rounds] {
        return RunToolLoop(*client, req, tools, rounds);
      }));
    }
    for (std::size_t i = 0; i < asks.size(); ++i) {
      ToolLoopResult r = replies[i].get();
      if (auto p = Accept(parent, asks[i], r)) {
        out.push_back(std::move(*p));
      } else if (asks[i].kind == "improve") {
        ++fruitless_[parent.node];
      }
    }
    return out;
  }

  std::vector<std::string> Notes() const override { return notes_; }

 private:
  static int RoundOf(const Json& detail) {
    return detail.is_object() ? detail.value("repair_round", 0) : 0;
  }

  PromptInputs Inputs() const {
    PromptInputs in;
    in.task = context_.task;
    in.task_source = task_source_;
    in.contract = context_.contract;
    in.bundle = context_.bundle;
    in.arch = context_.arch;
    in.plan = plan_.options;
    in.trajectory = trajectory_.Summary(limits_.trajectory);
    in.repair_cap = options_.repair_cap;
    return in;
  }

  Ask RepairAsk(int node, const Candidate& c, const Outcome& o, int round,
                const std::string& move) {
    Ask a;
    a.kind = "repair";
    a.repair_of = node;
    a.repair_round = round;
    a.base_move = move;
    PromptInputs in = Inputs();
    in.parent = c;
    in.parent_outcome = o;
    in.repair_round = round;
    a.prompt = RenderRepairPrompt(templates_, in, limits_);
    return a;
  }

  Ask ImproveAsk(const ParentView& parent, int k, int n) {
    Ask a;
    a.kind = "improve";
    PromptInputs in = Inputs();
    in.parent = parent.candidate;
    in.parent_outcome = parent.outcome;
    in.diagnoses = parent.diagnoses;
    for (const Diagnosis& d : parent.diagnoses) a.diagnoses.push_back(d.tool);
    if (memory_) {
      try {
        in.memory = memory_->Retrieve(MemoryQuery(context_, parent.diagnoses));
      } catch (const Error& e) {
        notes_.push_back(std::string("memory retrieval failed: ") + e.what());
      }
    }
    for (const KnowledgeEntry& e : in.memory) a.memory.push_back(e.id);
    in.tried_moves = parent.tried_moves;
    for (const auto& s : trajectory_.steps())
      if (s.parent == parent.node && !s.move.empty() &&
          std::find(in.tried_moves.begin(), in.tried_moves.end(), s.move) == in.tried_moves.end())
        in.tried_moves.push_back(s.move);
    a.prompt = RenderProposePrompt(templates_, in, limits_);
    if (n > 1)  // the same prompt would get the same (cached) reply
      a.prompt.text += fmt::format(
          "\n\n(This is idea {} of {} asked for at once: choose a move different from the "
          "others'.)\n",
          k + 1, n);
    return a;
  }

  std::optional<Proposal> Accept(const ParentView& parent, const Ask& a, const ToolLoopResult& r) {
    Json d{{"space", "llm"},
           {"ask", a.kind},
           {"parent", parent.node},
           {"repair_round", a.repair_round},
           {"model", config_.provider + ":" + config_.model},
           {"prompt",
            {{"system_hash", ContentHash({templates_.system})},
             {"system_chars", templates_.system.size()},
             {"text", a.prompt.text},
             {"hash", ContentHash({a.prompt.text})},
             {"chars", a.prompt.text.size()},
             {"sections", a.prompt.sections}}},
           {"diagnoses", a.diagnoses},
           {"memory", a.memory},
           {"tool_calls", r.calls},
           {"rounds", r.rounds},
           {"tokens", {{"input", r.usage.input_tokens}, {"output", r.usage.output_tokens}}},
           {"cost_usd", r.usage.cost_usd},
           {"cached", r.rounds > 0 && r.cached == r.rounds}};
    if (a.repair_of >= 0) d["repair_of"] = a.repair_of;
    auto give_up = [&](const std::string& why) -> std::optional<Proposal> {
      TrajectoryStep s;
      s.node = -1;
      s.parent = parent.node;
      s.move = a.kind == "repair" ? "repair " + a.base_move : "llm: (no candidate)";
      s.proposer = Name();
      s.outcome = "no_candidate";
      s.reason = why;
      trajectory_.Add(s);
      notes_.push_back(fmt::format("node {}: {}", parent.node, why));
      return std::nullopt;
    };
    if (!r.result.reply)
      return give_up("the model did not answer: " +
                     (r.result.error ? r.result.error->message : std::string("no reply")));
    const LlmReply& reply = *r.result.reply;
    d["reply_chars"] = reply.text.size();
    d["stop_reason"] = reply.stop_reason;
    Extraction x = ExtractCandidate(reply.text);
    if (!x.candidate) {
      std::string why = x.failure;
      if (reply.stop_reason == "length") why += " (the reply hit the token limit)";
      return give_up("no candidate in the reply: " + why);
    }
    d["extraction"] = x.chosen;
    std::string hash = ContentHash({x.candidate->source});
    if (!seen_.insert(hash).second) return give_up("the reply repeated a candidate already tried");
    std::string idea = x.move.empty() ? "an idea" : x.move;
    std::string move = a.kind == "repair" ? fmt::format("repair {} of node {}: {}", a.repair_round,
                                                        a.repair_of, idea)
                                          : "llm: " + idea;
    if (a.kind == "improve" && (trajectory_.Tried(move, parent.node) ||
                                std::find(parent.tried_moves.begin(), parent.tried_moves.end(),
                                          move) != parent.tried_moves.end()))
      return give_up("the reply repeated a move already made from this parent: " + move);
    d["move"] = move;
    Proposal p;
    p.parent = parent.node;
    p.move = move;
    p.candidate = *x.candidate;
    p.candidate.name =
        fmt::format("{}[llm-{}]", context_.task.path.stem().string(), hash.substr(0, 8));
    p.expected = Expected(reply.text);
    p.proposer = Name();
    p.detail = std::move(d);
    return p;
  }

  ProposerOptions options_;
  ProposeContext context_;
  LlmConfig config_;
  PromptTemplates templates_;
  PromptLimits limits_;
  std::unique_ptr<LlmClient> client_;
  std::unique_ptr<KnowledgeBase> memory_;
  std::unique_ptr<CutlassTree> cutlass_;
  std::unique_ptr<LlmToolbox> toolbox_;
  std::string task_source_;
  Plan plan_;
  Trajectory trajectory_;
  std::vector<std::string> notes_;
  std::map<int, std::vector<Pending>> pending_;  ///< failed children by parent
  std::set<int> repaired_;                       ///< nodes a repair was asked for
  std::set<int> observed_;
  std::set<std::string> seen_;  ///< content hashes proposed
  std::map<int, int> fruitless_;
};

}  // namespace

std::unique_ptr<Proposer> MakeLlmProposer(const ProposerOptions& options) {
  return std::make_unique<LlmProposer>(options);
}

}  // namespace kopt
