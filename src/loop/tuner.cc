#include "loop/tuner.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "plan/contract_inference.h"
#include "store/store_rules.h"

namespace kopt {
namespace fs = std::filesystem;
namespace {

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

NodeKind KindOf(const Candidate& c) {
  return c.kind == CandidateKind::kCuda ? NodeKind::kCuda : NodeKind::kHybrid;
}

NodeState StateOf(const Outcome& o) {
  if (std::holds_alternative<Measured>(o)) return NodeState::kMeasured;
  if (std::holds_alternative<BuildFailed>(o)) return NodeState::kBuildFailed;
  if (std::holds_alternative<Incorrect>(o)) return NodeState::kIncorrect;
  if (std::holds_alternative<TimedOut>(o)) return NodeState::kTimedOut;
  return NodeState::kCrashed;
}

// The task's own Model as a hybrid candidate: the reference measured like any
// other candidate (the root when the proposer has none and the objective
// needs a measurement).
std::string ReferenceSource(const Task& task) {
  return fmt::format(
      "# kopt: the task's own Model, measured as a candidate (the root of a search).\n"
      "import importlib.util as _u\n\n"
      "_spec = _u.spec_from_file_location(\"_kopt_reference_task\", r\"{}\")\n"
      "_task = _u.module_from_spec(_spec)\n"
      "_spec.loader.exec_module(_task)\n"
      "ModelNew = _task.Model\n",
      task.path.string());
}

Json ProposalDetail(const Proposal& p) { return p.detail.is_null() ? Json::object() : p.detail; }

// Spent by the run since `start`, as a fraction of `share` (the task's).
bool ShareSpent(const BudgetSpent& now, const BudgetSpent& start, const BudgetLimits& share) {
  if (share.wall_s > 0 && now.wall_s - start.wall_s >= share.wall_s) return true;
  if (share.gpu_s > 0 && now.gpu_s - start.gpu_s >= share.gpu_s) return true;
  if (share.candidates > 0 && now.candidates - start.candidates >= share.candidates) return true;
  if (share.llm_tokens > 0 && now.llm_tokens - start.llm_tokens >= share.llm_tokens) return true;
  if (share.llm_cost_usd > 0 && now.llm_cost_usd - start.llm_cost_usd >= share.llm_cost_usd)
    return true;
  return false;
}

// Seconds left of a task's wall share (infinite when wall is not limited).
double RemainingWallS(const BudgetSpent& now, const BudgetSpent& start, const BudgetLimits& share) {
  if (share.wall_s <= 0) return std::numeric_limits<double>::infinity();
  return share.wall_s - (now.wall_s - start.wall_s);
}

}  // namespace

std::optional<std::string> SkipAutoProfile(const Measured& m, const TaskBundle& bundle,
                                           bool searching, double share_left_s,
                                           double mean_profile_s) {
  if (bundle.floor_ms > 0 && m.time_ms.median > 0) {
    double fraction = bundle.floor_ms / m.time_ms.median;
    if (fraction >= kAutoProfileNearFloor)
      return fmt::format(
          "at {:.0f}% of its floor, nothing a diagnosis suggests could gain much (kopt profile "
          "explains it on demand)",
          100 * fraction);
  }
  double cost_s = mean_profile_s > 0 ? mean_profile_s : kAutoProfileCostS;
  if (searching && share_left_s < 2 * cost_s)
    return fmt::format("{:.0f} s of the task's budget left, a profile takes about {:.0f} s",
                       std::max(0.0, share_left_s), cost_s);
  return std::nullopt;
}

namespace {

// An equal share of what is left for each of the `left` tasks still to run,
// once `reserve_wall_s` (the fixed costs still to come: the later tasks'
// capture and every task's finishing work) is set aside.
BudgetLimits Share(const BudgetLimits& limits, const BudgetSpent& spent, int left,
                   double reserve_wall_s) {
  BudgetLimits s;
  left = std::max(left, 1);
  // A limited share that comes out at nothing is the smallest positive one:
  // 0 reads as "no limit" (on the H200, a suite whose fixed costs exceeded
  // the budget gave its first tasks unlimited shares: 3 tasks in 9 minutes).
  constexpr double kNothing = 1e-9;
  if (limits.wall_s > 0)
    s.wall_s = std::max(kNothing, (limits.wall_s - spent.wall_s - reserve_wall_s) / left);
  if (limits.gpu_s > 0) s.gpu_s = std::max(kNothing, (limits.gpu_s - spent.gpu_s) / left);
  if (limits.candidates > 0)
    s.candidates = std::max<long long>(1, (limits.candidates - spent.candidates + left - 1) / left);
  if (limits.llm_tokens > 0)
    s.llm_tokens = std::max<long long>(1, (limits.llm_tokens - spent.llm_tokens) / left);
  if (limits.llm_cost_usd > 0)
    s.llm_cost_usd = std::max(kNothing, (limits.llm_cost_usd - spent.llm_cost_usd) / left);
  return s;
}

void WriteBest(const fs::path& out, const std::string& task, const Proposal& p,
               const EvalRecord* rec, const TaskBundle& bundle, const std::string& run_id,
               int node) {
  if (out.empty() || p.candidate.source.empty()) return;
  fs::path dir = out / task;
  fs::create_directories(dir);
  std::string ext = p.candidate.kind == CandidateKind::kCuda ? ".cu" : ".py";
  WriteTextFileAtomic(dir / ("best" + ext), p.candidate.source);
  Json j{{"task", task},
         {"run", run_id},
         {"node", node},
         {"name", p.candidate.name},
         {"move", p.move}};
  if (rec) {
    j["outcome"] = ToJson(rec->outcome);
    if (const auto* m = std::get_if<Measured>(&rec->outcome)) {
      j["time_ms"] = m->time_ms.median;
      if (auto s = SpeedupVsEager(*m, bundle)) j["speedup_vs_eager"] = *s;
      if (auto s = SpeedupVsCompile(*m, bundle)) j["speedup_vs_compile"] = *s;
    }
  }
  WriteJsonFileAtomic(dir / "best.json", j);
}

}  // namespace

Json ToJson(const LoopOptions& o) {
  Json replay = Json::array();
  for (const auto& p : o.proposer_options.replay_paths) replay.push_back(p.string());
  // The model's settings as given (never its key, which only ever comes
  // from the environment), so --resume reaches the same model.
  const LlmConfig& llm = o.proposer_options.llm;
  return Json{
      {"proposer", o.proposer},
      {"replay_paths", replay},
      {"shipped_solutions", o.proposer_options.shipped_solutions},
      {"llm",
       {{"model", llm.model},
        {"base_url", llm.base_url},
        {"command", llm.command},
        {"repair_cap", o.proposer_options.repair_cap}}},
      {"search", o.search},
      {"seed", o.seed},
      {"objective", ObjectiveName(o.objective)},
      {"speed_fraction", o.speed_fraction},
      {"budget", ToJson(o.budget)},
      {"pipeline", o.pipeline},
      {"seeds", o.eval.seeds},
      {"timing", o.eval.timing},
      {"timed_check_p", o.eval.policy.timed_check_p},
      {"tolerance",
       o.eval.policy.tolerance == TolerancePolicy::kKernelBench ? "kernelbench" : "calibrated"},
      {"baselines", o.baselines},
      {"compile_baseline", o.compile_baseline},
      {"measure_reference_root", o.measure_reference_root},
      {"finalists", o.finalists},
      {"finalist_max_seconds", o.finalist_max_seconds},
      {"profile", ProfileModeName(o.profile)},
      {"profile_limit", o.profile_limit},
      {"arch", o.arch},
      {"out", o.out.string()},
      {"scratch", o.scratch.string()},
      {"argv", o.argv}};
}

LoopOptions LoopOptionsFromJson(const Json& j) {
  LoopOptions o;
  o.proposer = j.value("proposer", o.proposer);
  for (const auto& p : j.value("replay_paths", Json::array()))
    o.proposer_options.replay_paths.push_back(p.get<std::string>());
  o.proposer_options.shipped_solutions = j.value("shipped_solutions", true);
  if (j.contains("llm") && j["llm"].is_object()) {
    const Json& llm = j["llm"];
    o.proposer_options.llm.model = llm.value("model", std::string());
    o.proposer_options.llm.base_url = llm.value("base_url", std::string());
    o.proposer_options.llm.command = llm.value("command", std::string());
    o.proposer_options.repair_cap = llm.value("repair_cap", o.proposer_options.repair_cap);
  }
  o.search = j.value("search", o.search);
  o.seed = j.value("seed", o.seed);
  o.search_options.seed = o.seed;
  o.objective = ParseObjective(j.value("objective", "time"));
  o.speed_fraction = j.value("speed_fraction", o.speed_fraction);
  o.budget = BudgetLimitsFromJson(j.value("budget", Json::object()));
  o.pipeline = j.value("pipeline", o.pipeline);
  o.eval.seeds = j.value("seeds", o.eval.seeds);
  o.eval.timing = j.value("timing", Json::object());
  o.eval.policy.timed_check_p = j.value("timed_check_p", o.eval.policy.timed_check_p);
  if (j.value("tolerance", "") == "kernelbench")
    o.eval.policy.tolerance = TolerancePolicy::kKernelBench;
  o.baselines = j.value("baselines", o.baselines);
  o.compile_baseline = j.value("compile_baseline", o.compile_baseline);
  o.measure_reference_root = j.value("measure_reference_root", o.measure_reference_root);
  o.finalists = j.value("finalists", o.finalists);
  o.finalist_max_seconds = j.value("finalist_max_seconds", o.finalist_max_seconds);
  o.profile = ParseProfileMode(j.value("profile", ProfileModeName(o.profile)));
  o.profile_limit = j.value("profile_limit", o.profile_limit);
  o.arch = j.value("arch", o.arch);
  o.out = j.value("out", "");
  o.scratch = j.value("scratch", "");
  o.argv = j.value("argv", Json::array());
  return o;
}

// Everything the loop knows about one task's nodes.
struct Tuner::TaskState {
  struct Node {
    Proposal proposal;
    std::string hash;
    int depth = 0;
    bool virtual_root = false;         ///< the clean eager time, not a measurement
    std::optional<EvalRecord> record;  ///< once evaluated
    std::optional<double> objective;
    std::vector<std::string> child_moves;
    std::shared_future<void> build;  ///< compiling ahead on the CPU pool
    bool profiled = false;           ///< profiled (or tried: a failure is not repeated)
    std::vector<Diagnosis> diagnoses;
  };
  std::vector<Node> nodes;
  TaskProgress progress;
};

Tuner::Tuner(Runner* runner, RunStore* store, LoopOptions options)
    : runner_(runner), store_(store), options_(std::move(options)) {
  options_.search_options.seed = options_.seed;
}

void Tuner::Log(const std::string& line) {
  if (on_log) on_log(line);
}

LoopResult Tuner::Run(const std::vector<LoopTask>& tasks) {
  if (tasks.empty()) throw Error("kopt optimize needs at least one task.");
  NewRun nr;
  Json opts = ToJson(options_);
  Json list = Json::array();
  for (const auto& t : tasks)
    // The contract too: a run killed before its task was stored resumes under
    // the same contract.
    list.push_back({{"path", t.task.path.string()},
                    {"from", t.from ? t.from->path.string() : ""},
                    {"contract", store_rules::ContractToStored(t.contract)}});
  opts["tasks"] = list;
  nr.options = opts;
  nr.device = ToJson(runner_->Device());
  nr.kopt_version = "0.2.0";
  RunRecord run = store_->CreateRun(nr);
  Budget budget(options_.budget);
  return Execute(run.id, tasks, &budget, /*resume=*/false);
}

LoopResult Tuner::Resume(const std::string& run_id, const std::optional<BudgetLimits>& limits) {
  // "last": the newest run of the store (a script's next call need not know
  // the id the first call made).
  std::optional<RunRecord> run;
  if (run_id == "last") {
    if (auto newest = store_->ListRuns(1); !newest.empty()) run = newest.front().run;
  } else {
    run = store_->FindRun(run_id);
  }
  if (!run)
    throw Error("there is no run " + run_id +
                " in the run store: see kopt runs for the runs it holds.");
  // A run's baselines, floors and timings belong to its device: resumed on
  // another, its tasks would be judged against numbers of a different card.
  DeviceInfo was = DeviceInfoFromJson(run->device);
  const DeviceInfo& now = runner_->Device();
  if (!was.name.empty() && (was.name != now.name || was.sm_count != now.sm_count))
    throw Error(fmt::format(
        "run {} was measured on {} ({} SMs) and this machine has {} ({} SMs): its baselines and "
        "timings would not compare; resume it on the same GPU or start a new run.",
        run->id, was.name, was.sm_count, now.name.empty() ? "no GPU" : now.name, now.sm_count));
  LoopOptions saved = LoopOptionsFromJson(run->options);
  // What the command line may not change on resume: how the search runs.
  options_.proposer = saved.proposer;
  options_.proposer_options.replay_paths = saved.proposer_options.replay_paths;
  options_.proposer_options.shipped_solutions = saved.proposer_options.shipped_solutions;
  // The model the run used, unless the command line names one.
  LlmConfig& llm = options_.proposer_options.llm;
  if (llm.model.empty() && llm.command.empty()) {
    llm.model = saved.proposer_options.llm.model;
    llm.command = saved.proposer_options.llm.command;
    if (llm.base_url.empty()) llm.base_url = saved.proposer_options.llm.base_url;
  }
  options_.search = saved.search;
  options_.seed = saved.seed;
  options_.search_options.seed = saved.seed;
  options_.objective = saved.objective;
  options_.speed_fraction = saved.speed_fraction;
  options_.budget = limits ? *limits : saved.budget;
  // Under the run's own limits a task that spent its share has nothing more
  // coming: searching it again would repeat its finishing work and take time
  // from the tasks after it.
  search_spent_tasks_ = limits.has_value();
  options_.eval.seeds = saved.eval.seeds;
  options_.eval.timing = saved.eval.timing;
  options_.eval.policy.timed_check_p = saved.eval.policy.timed_check_p;
  options_.eval.policy.tolerance = saved.eval.policy.tolerance;
  options_.measure_reference_root = saved.measure_reference_root;
  options_.finalists = saved.finalists;
  options_.finalist_max_seconds = saved.finalist_max_seconds;
  options_.profile = saved.profile;
  options_.profile_limit = saved.profile_limit;
  if (options_.out.empty()) options_.out = saved.out;
  if (options_.scratch.empty()) options_.scratch = saved.scratch;
  std::vector<LoopTask> tasks;
  std::vector<TaskRecord> records = store_->ListTasks(run->id);
  Json list = run->options.value("tasks", Json::array());
  for (size_t i = 0; i < list.size(); ++i) {
    LoopTask t;
    t.task.path = list[i].value("path", "");
    t.task.name = t.task.path.stem().string();
    if (i < records.size()) {
      t.task.name = records[i].name;
      t.contract = records[i].contract;
    } else if (list[i].contains("contract")) {
      t.contract = store_rules::ContractFromStored(list[i]["contract"]);
    }
    std::string from = list[i].value("from", "");
    if (!from.empty()) {
      Candidate c;
      c.path = from;
      c.name = fs::path(from).filename().string();
      c.kind = c.path.extension() == ".cu" ? CandidateKind::kCuda : CandidateKind::kHybrid;
      // The root node holds the source it started from.
      for (const auto& n : store_->ListNodes(run->id, static_cast<int>(i)))
        if (n.id == 0) c.source = n.source;
      if (c.source.empty() && fs::exists(from)) c.source = ReadTextFile(from);
      t.from = c;
    }
    tasks.push_back(t);
  }
  Budget budget(options_.budget);
  budget.Restore(run->spent);
  store_->SetRunStatus(run->id, RunStatus::kRunning, "resumed");
  return Execute(run->id, tasks, &budget, /*resume=*/true);
}

LoopResult Tuner::Execute(const std::string& run_id, const std::vector<LoopTask>& tasks,
                          Budget* budget, bool resume) {
  double t0 = NowS();
  gpu_busy_s_ = 0;
  profile_s_ = 0;
  profiles_run_ = 0;
  LoopResult result;
  result.run_id = run_id;
  result.limits = options_.budget;
  for (int i = 0; i < static_cast<int>(tasks.size()); ++i) {
    result.tasks.push_back(
        RunTask(run_id, i, static_cast<int>(tasks.size()), tasks[i], budget, resume));
    store_->SetRunSpent(run_id, budget->Spent());
    if (stop_) break;
  }
  result.spent = budget->Spent();
  result.wall_s = NowS() - t0;
  result.gpu_busy_s = gpu_busy_s_;
  result.profile_s = profile_s_;
  bool all_failed = !result.tasks.empty() &&
                    std::all_of(result.tasks.begin(), result.tasks.end(),
                                [](const auto& t) { return t.status == TaskStatus::kFailed; });
  if (stop_) {
    result.status = RunStatus::kInterrupted;
    result.note = "stopped by the user; kopt optimize --resume " + run_id + " continues it";
  } else if (budget->Exhausted() ||
             std::any_of(result.tasks.begin(), result.tasks.end(),
                         [](const auto& t) { return t.status == TaskStatus::kBudgetSpent; })) {
    result.status = RunStatus::kBudgetSpent;
    result.note =
        budget->Exhausted() ? budget->ExhaustedReason() : "each task's share of the budget spent";
  } else if (all_failed) {
    result.status = RunStatus::kFailed;
    result.note = result.tasks.front().error;
  } else {
    result.status = RunStatus::kFinished;
    result.note = "the search ran out of ideas before the budget";
  }
  store_->SetRunSpent(run_id, result.spent);
  store_->SetRunStatus(run_id, result.status, result.note);
  return result;
}

TaskResult Tuner::RunTask(const std::string& run_id, int index, int count, const LoopTask& lt,
                          Budget* budget, bool resume) {
  TaskResult res;
  res.index = index;
  res.name = lt.task.name;
  TaskState st;
  st.progress.task_index = index;
  st.progress.task_count = count;
  st.progress.task = lt.task.name;
  auto progress = [&](const std::string& stage, const std::string& message = "") {
    if (!stage.empty()) st.progress.stage = stage;
    st.progress.message = message;
    st.progress.budget_fraction = budget->FractionSpent();
    if (on_progress) on_progress(st.progress);
  };
  auto fail = [&](const std::string& why) {
    res.status = TaskStatus::kFailed;
    res.error = why;
    if (store_->GetTask(run_id, index)) store_->SetTaskStatus(run_id, index, TaskStatus::kFailed);
    progress("done", "failed: " + why);
    return res;
  };

  // A resumed task that already ended keeps its result.
  std::optional<TaskRecord> existing = resume ? store_->GetTask(run_id, index) : std::nullopt;
  if (existing &&
      (existing->status == TaskStatus::kFinished || existing->status == TaskStatus::kFailed ||
       (existing->status == TaskStatus::kBudgetSpent && !search_spent_tasks_))) {
    res.status = existing->status;
    res.bundle = existing->bundle;
    res.nodes = static_cast<int>(store_->ListNodes(run_id, index).size());
    if (existing->best_node) {
      res.best_node = *existing->best_node;
      if (auto o = store_->GetOutcome(run_id, index, res.best_node); o && o->evaluation.is_object())
        res.best = EvalRecordFromJson(o->evaluation);
      for (const auto& n : store_->ListNodes(run_id, index))
        if (n.id == res.best_node) {
          Proposal p;
          p.move = n.move;
          p.candidate.name = n.name;
          p.candidate.source = n.source;
          res.best_proposal = p;
        }
    }
    for (const auto& o : store_->ListOutcomes(run_id, index))
      (o.verdict == "measured" ? res.measured : res.failed)++;
    res.finalists = existing->finalists;  // their re-timing names the winner
    std::optional<double> x = store_rules::FinalistWinnerSpeedup(existing->finalists);
    if (!x && res.best)
      if (const auto* m = std::get_if<Measured>(&res.best->outcome))
        x = SpeedupVsEager(*m, existing->bundle);
    res.reference_kept = res.best_proposal && !res.best_proposal->candidate.source.empty() &&
                         store_rules::KeepsReference(x);
    return res;
  }

  // Capture (a resumed task keeps the bundle it was searched against, and
  // the contract it was held to, inferences included).
  double task_started = NowS();
  TaskBundle bundle;
  Contract contract = lt.contract;
  progress("capturing");
  if (existing) {
    bundle = existing->bundle;
    contract = existing->contract;
  } else {
    TaskRecord tr;
    tr.run_id = run_id;
    tr.index = index;
    tr.name = lt.task.name;
    tr.path = lt.task.path.string();
    tr.contract = lt.contract;
    try {
      bundle = runner_->Bundle(lt.task, options_.baselines, options_.compile_baseline);
    } catch (const Error& e) {
      tr.status = TaskStatus::kFailed;
      store_->AddTask(tr);
      return fail(e.what());
    }
    tr.task_hash = bundle.task_hash;
    tr.bundle = bundle;
    std::optional<OpGraph> graph;
    try {
      graph = OpGraphFromJson(bundle.graph);
    } catch (const Error&) {
      // A malformed graph infers nothing; the planner says why.
    }
    InferContract(graph, bundle, &contract);
    tr.contract = contract;
    tr.status = TaskStatus::kRunning;
    store_->AddTask(tr);
  }
  res.bundle = bundle;
  store_->SetTaskStatus(run_id, index, TaskStatus::kRunning);

  // The run's budget, shared: this task's search gets an equal part of what
  // is left once it is captured and the fixed costs still to come are set
  // aside. Capture and baselines before a search and the finalists after it
  // are fixed costs of every task (the run's wall clock counts them): were
  // they left in the shares, the first tasks would spend the budget and the
  // last ones get nothing (on the H200, a 10-minute run of the 51-task suite
  // searched 31 tasks and never reached 20).
  double searched_at = NowS();
  double capture_s = searched_at - task_started;
  FixedCosts est = fixed_costs_;
  double per_task = est.tasks > 0 ? est.per_task_s() : capture_s;
  double finishing = est.tasks > 0 ? est.finish_s / est.tasks : 0;
  BudgetSpent start = budget->Spent();
  BudgetLimits share =
      Share(options_.budget, start, count - index, per_task * (count - index - 1) + finishing);

  // The proposer and the search.
  std::unique_ptr<Proposer> proposer;
  std::unique_ptr<SearchPolicy> policy;
  try {
    proposer = make_proposer ? make_proposer()
                             : MakeProposer(options_.proposer, options_.proposer_options);
    ProposeContext ctx;
    ctx.task = lt.task;
    ctx.bundle = &bundle;
    ctx.contract = contract;
    ctx.arch = options_.arch;
    ctx.from = lt.from;
    ctx.budget = budget;
    ctx.seed = options_.seed + static_cast<std::uint64_t>(index);
    proposer->Begin(ctx);
    SearchOptions so = options_.search_options;
    so.seed = options_.seed + static_cast<std::uint64_t>(index);
    policy = MakeSearchPolicy(options_.search, so);
  } catch (const Error& e) {
    return fail(e.what());
  }
  res.notes = proposer->Notes();
  for (const auto& n : res.notes) Log(lt.task.name + ": " + n);

  EvalOptions eval = options_.eval;
  eval.contract = contract;
  auto& nodes = st.nodes;

  auto record_node = [&](int id, const TaskState::Node& n) {
    NodeRecord r;
    r.run_id = run_id;
    r.task_index = index;
    r.id = id;
    if (n.proposal.parent >= 0) r.parent = n.proposal.parent;
    r.depth = n.depth;
    r.move = n.proposal.move;
    r.proposer = n.proposal.proposer;
    r.expected = n.proposal.expected;
    r.kind = n.virtual_root ? NodeKind::kReference : KindOf(n.proposal.candidate);
    r.name = n.proposal.candidate.name;
    r.source = n.proposal.candidate.source;
    r.source_hash = n.hash;
    r.detail = ProposalDetail(n.proposal);
    return store_->AddNode(r);
  };

  // Evaluates one node: the Runner verifies and times it; budget, store,
  // search and callbacks hear about it.
  int best = -1;
  auto start_build = [&](TaskState::Node& n) {
    // The Runner builds a cuda candidate, and a hybrid's embedded CUDA.
    if (n.proposal.candidate.source.empty()) return;
    Runner* r = runner_;
    Candidate c = n.proposal.candidate;
    n.build = std::async(std::launch::async, [r, c] { r->Prebuild({c}); }).share();
  };
  auto evaluate = [&](int id) -> std::optional<double> {
    TaskState::Node& n = nodes[id];
    if (n.build.valid()) {
      n.build.wait();
      ++st.progress.built;
    }
    st.progress.in_flight = 1;
    progress("", "measuring " + n.proposal.candidate.name);
    double e0 = NowS();
    EvalRecord rec = runner_->Evaluate(lt.task, bundle, n.proposal.candidate, eval);
    double busy = rec.verify_s + rec.time_s;
    if (busy <= 0) busy = NowS() - e0;
    gpu_busy_s_ += busy;
    budget->AddCandidate();
    budget->AddGpuSeconds(busy);
    ++st.progress.evaluated;
    st.progress.in_flight = 0;
    std::optional<double> objective;
    if (const auto* m = std::get_if<Measured>(&rec.outcome))
      objective = SearchValue(*m, options_.objective);
    OutcomeRecord orec = MakeOutcomeRecord(run_id, index, id, rec.outcome);
    orec.evaluation = ToJson(rec);
    orec.objective = objective;
    orec.gpu_s = busy;
    store_->RecordOutcome(orec, budget->Spent());
    if (objective) {
      ++st.progress.measured;
      ++res.measured;
    } else {
      ++st.progress.failed;
      ++res.failed;
    }
    n.record = rec;
    n.objective = objective;
    bool new_best = false;
    if (objective && (best < 0 || *objective < *nodes[best].objective)) {
      best = id;
      new_best = true;
      const auto& m = std::get<Measured>(rec.outcome);
      st.progress.best_vs_eager = SpeedupVsEager(m, bundle);
      st.progress.best_vs_compile = SpeedupVsCompile(m, bundle);
      st.progress.best_name = n.proposal.candidate.name;
      store_->SetTaskBest(run_id, index, id);
      WriteBest(options_.out, lt.task.name, n.proposal, &rec, bundle, run_id, id);
    }
    NodeEvent ev{index, &lt, &bundle, id, &n.proposal, &*n.record, objective, new_best, best};
    for (auto& cb : on_measurement) cb(ev);
    proposer->Observe(id, n.proposal, rec.outcome);
    progress("", fmt::format("{}: {}", n.proposal.candidate.name,
                             OutcomeLine(rec.outcome).substr(0, 160)));
    return objective;
  };

  // The profile stage: a measured node profiled and diagnosed once; what it
  // finds goes to the store and to the proposer with the node's children.
  bool profile_during_search =
      options_.profile == ProfileMode::kBest ||
      (options_.profile == ProfileMode::kAuto && proposer->WantsDiagnoses());
  auto profile_node = [&](int id, bool searching) {
    TaskState::Node& n = nodes[id];
    if (!profiler_ || profiler_broken_ || n.profiled || n.virtual_root || !n.record ||
        !std::holds_alternative<Measured>(n.record->outcome))
      return;
    if (options_.profile == ProfileMode::kAuto) {
      const Measured& m = std::get<Measured>(n.record->outcome);
      if (auto why =
              SkipAutoProfile(m, bundle, searching, RemainingWallS(budget->Spent(), start, share),
                              profiles_run_ > 0 ? profile_s_ / profiles_run_ : 0)) {
        Log(fmt::format("{}: {} not profiled: {}", lt.task.name, n.proposal.candidate.name, *why));
        // Near its floor it stays so; a short share does not stop the
        // winner's explanation at the end.
        if (SkipAutoProfile(m, bundle, false, std::numeric_limits<double>::infinity(), 0))
          n.profiled = true;
        return;
      }
    }
    n.profiled = true;
    ++profiles_run_;
    std::string stage = st.progress.stage;
    progress("profiling", "profiling " + n.proposal.candidate.name);
    NodeProfile p = profiler_->Profile(lt.task, bundle, n.proposal.candidate, *n.record);
    gpu_busy_s_ += p.gpu_s;
    profile_s_ += p.gpu_s;
    budget->AddGpuSeconds(p.gpu_s);
    if (!p.ok) {
      Log(fmt::format("{}: {} was not profiled: {}", lt.task.name, n.proposal.candidate.name,
                      p.error));
      // A profiler that cannot start (no ncu, no permission) fails the same
      // way on every node: stop asking.
      if (p.error.find("was not found") != std::string::npos ||
          p.error.find("ERR_NVGPUCTRPERM") != std::string::npos)
        profiler_broken_ = true;
      progress(stage);
      return;
    }
    ProfileRecord rec;
    rec.run_id = run_id;
    rec.task_index = index;
    rec.node = id;
    rec.profile = p.profile;
    rec.diagnoses = p.diagnoses;
    store_->PutProfile(rec);
    store_->SetRunSpent(run_id, budget->Spent());
    n.diagnoses = std::move(p.diagnoses);
    ++res.profiled;
    progress(stage, fmt::format("{}: profiled, {} diagnosis(es)", n.proposal.candidate.name,
                                n.diagnoses.size()));
  };

  // The root: resumed, the proposer's starting kernel, the reference
  // measured as a candidate, or the clean process's eager time.
  std::vector<NodeRecord> stored =
      resume ? store_->ListNodes(run_id, index) : std::vector<NodeRecord>{};
  std::map<int, OutcomeRecord> outcomes;
  std::map<int, ProfileRecord> profiles;
  if (resume) {
    for (auto& o : store_->ListOutcomes(run_id, index)) outcomes[o.node] = o;
    for (auto& p : store_->ListProfiles(run_id, index)) profiles[p.node] = p;
  }
  if (!stored.empty()) {
    for (const NodeRecord& r : stored) {
      TaskState::Node n;
      n.proposal.parent = r.parent ? *r.parent : -1;
      n.proposal.move = r.move;
      n.proposal.expected = r.expected;
      n.proposal.proposer = r.proposer;
      n.proposal.detail = r.detail;
      n.proposal.candidate.name = r.name;
      n.proposal.candidate.source = r.source;
      n.proposal.candidate.kind =
          r.kind == NodeKind::kCuda ? CandidateKind::kCuda : CandidateKind::kHybrid;
      n.hash = r.source_hash;
      n.depth = r.depth;
      n.virtual_root = r.kind == NodeKind::kReference && r.source.empty();
      if (auto it = outcomes.find(r.id); it != outcomes.end()) {
        if (it->second.evaluation.is_object() && it->second.evaluation.contains("outcome"))
          n.record = EvalRecordFromJson(it->second.evaluation);
        n.objective = it->second.objective;
      }
      if (auto it = profiles.find(r.id); it != profiles.end()) {
        n.profiled = true;
        n.diagnoses = it->second.diagnoses;
        ++res.profiled;
      }
      if (n.proposal.parent >= 0 && n.proposal.parent < static_cast<int>(nodes.size()))
        nodes[n.proposal.parent].child_moves.push_back(n.proposal.move);
      nodes.push_back(std::move(n));
    }
  } else {
    TaskState::Node root;
    std::optional<Proposal> rp = proposer->Root();
    if (rp) {
      root.proposal = *rp;
    } else if (options_.measure_reference_root || options_.objective != Objective::kTime) {
      fs::path dir =
          options_.scratch.empty() ? fs::temp_directory_path() / "kopt-loop" : options_.scratch;
      fs::create_directories(dir);
      root.proposal.candidate.kind = CandidateKind::kHybrid;
      root.proposal.candidate.source = ReferenceSource(lt.task);
      root.proposal.candidate.path = dir / (lt.task.name + "_reference.py");
      root.proposal.candidate.name = lt.task.name + " (reference)";
      WriteTextFileAtomic(root.proposal.candidate.path, root.proposal.candidate.source);
      root.proposal.move = "the task's own Model";
    } else {
      root.virtual_root = true;
      root.proposal.candidate.name = lt.task.name + " (reference)";
      root.proposal.move = "the task's own Model (eager, clean process)";
    }
    root.proposal.parent = -1;
    root.proposal.proposer =
        root.proposal.proposer.empty() ? proposer->Name() : root.proposal.proposer;
    root.hash = root.virtual_root ? "reference:" + bundle.task_hash
                                  : ContentHash({root.proposal.candidate.source});
    nodes.push_back(std::move(root));
    record_node(0, nodes[0]);
  }
  // Hybrid candidates load from a file: give sources without one a path.
  auto ensure_path = [&](TaskState::Node& n, int id) {
    Candidate& c = n.proposal.candidate;
    if (c.kind != CandidateKind::kHybrid || c.source.empty()) return;
    if (!c.path.empty() && fs::exists(c.path) && ReadTextFile(c.path) == c.source) return;
    fs::path dir =
        (options_.scratch.empty() ? fs::temp_directory_path() / "kopt-loop" : options_.scratch) /
        (run_id + "-" + std::to_string(index));
    fs::create_directories(dir);
    c.path = dir / fmt::format("node{}.py", id);
    WriteTextFileAtomic(c.path, c.source);
  };
  for (size_t i = 0; i < nodes.size(); ++i) ensure_path(nodes[i], static_cast<int>(i));

  TaskState::Node& root = nodes[0];
  progress("measuring the root");
  if (!root.objective) {
    if (root.virtual_root && bundle.eager_ms) {
      Measured m;
      m.time_ms = *bundle.eager_ms;
      m.clean_eager_ms = bundle.eager_ms;
      m.notes.push_back(
          "the root is the reference: the clean process's eager time, not measured again");
      OutcomeRecord orec = MakeOutcomeRecord(run_id, index, 0, m);
      orec.objective = m.time_ms.median;
      orec.evaluation = Json{{"virtual_root", true}};
      store_->RecordOutcome(orec, budget->Spent());
      root.objective = m.time_ms.median;
    } else if (root.virtual_root) {
      // No baseline was timed (kopt eval): the root stands for the reference
      // unmeasured; a sweep ranks its children by their own times.
      root.objective = 1.0;
    } else {
      start_build(root);
      std::optional<double> v = evaluate(0);
      if (!v) {
        std::string why = root.record ? OutcomeLine(root.record->outcome) : "not measured";
        return fail(fmt::format("the starting point {} cannot be searched from: {}",
                                root.proposal.candidate.name, why));
      }
    }
  }
  if (best < 0 && root.objective) best = 0;
  policy->Begin(*root.objective, root.hash);
  if (profile_during_search && best == 0) profile_node(0, true);

  // Resumed nodes go back into the search in id order; what was in flight is
  // measured first.
  std::deque<int> queue;
  for (int id = 1; id < static_cast<int>(nodes.size()); ++id) {
    TaskState::Node& n = nodes[id];
    int got = policy->AddChild(n.proposal.parent, n.proposal.move, n.hash);
    if (got != id)
      throw Error(
          fmt::format("run {} cannot be resumed: its search tree does not rebuild "
                      "(node {} came back as {}).",
                      run_id, id, got));
    if (n.record) {
      NodeResult r;
      r.state = n.objective ? NodeState::kMeasured : StateOf(n.record->outcome);
      if (r.state == NodeState::kMeasured && !n.objective) r.state = NodeState::kCrashed;
      r.objective = n.objective.value_or(0);
      policy->Report(id, r);
      if (n.objective) {
        ++res.measured;
        if (best < 0 || *n.objective < *nodes[best].objective) best = id;
      } else {
        ++res.failed;
      }
    } else {
      queue.push_back(id);
      start_build(n);
    }
  }
  // (When the budget is already spent they stay unmeasured, and the search's
  // end says so.)
  if (resume && !queue.empty() && !budget->Exhausted() &&
      !ShareSpent(budget->Spent(), start, share))
    Log(fmt::format("{}: measuring {} candidate(s) that were in flight when the run stopped",
                    lt.task.name, queue.size()));
  st.progress.proposed = static_cast<int>(nodes.size()) - 1;
  st.progress.measured = res.measured;
  st.progress.failed = res.failed;
  if (best >= 0 && nodes[best].record)
    if (const auto* m = std::get_if<Measured>(&nodes[best].record->outcome)) {
      st.progress.best_vs_eager = SpeedupVsEager(*m, bundle);
      st.progress.best_vs_compile = SpeedupVsCompile(*m, bundle);
      st.progress.best_name = nodes[best].proposal.candidate.name;
    }

  // The search.
  progress("searching");
  TaskStatus end = TaskStatus::kFinished;
  int duplicates = 0;
  int tried = 0;  // candidates evaluated by this search (the root aside)
  while (true) {
    if (stop_) {
      end = TaskStatus::kRunning;  // resumable
      break;
    }
    // Every task gets a try: its first candidate is measured even when the
    // run's time is spent; counted limits (candidates, tokens, cost) are
    // never overrun.
    if ((budget->Exhausted() || ShareSpent(budget->Spent(), start, share)) &&
        (tried >= kMinCandidatesPerTask || budget->CountsExhausted())) {
      end = TaskStatus::kBudgetSpent;
      break;
    }
    // Keep the pipeline full: proposals compile while the GPU measures.
    while (static_cast<int>(queue.size()) < std::max(1, options_.pipeline)) {
      std::vector<int> ids =
          policy->NextBatch(std::max(1, options_.pipeline) - static_cast<int>(queue.size()));
      if (ids.empty()) break;
      for (int id : ids) {
        ParentView view;
        view.node = id;
        view.depth = nodes[id].depth;
        if (!nodes[id].virtual_root) view.candidate = nodes[id].proposal.candidate;
        view.detail = ProposalDetail(nodes[id].proposal);
        if (nodes[id].record) view.outcome = nodes[id].record->outcome;
        view.diagnoses = nodes[id].diagnoses;
        view.tried_moves = nodes[id].child_moves;
        std::vector<Proposal> props = proposer->Propose(view, 1);
        if (props.empty()) {
          policy->NoProposal(id);
          continue;
        }
        Proposal p = props.front();
        p.parent = id;
        if (p.proposer.empty()) p.proposer = proposer->Name();
        std::string hash = ContentHash({p.candidate.source});
        int child = policy->AddChild(id, p.move, hash);
        nodes[id].child_moves.push_back(p.move);
        if (child < 0) {
          ++duplicates;
          continue;
        }
        TaskState::Node n;
        n.proposal = p;
        n.hash = hash;
        n.depth = nodes[id].depth + 1;
        nodes.push_back(std::move(n));
        ensure_path(nodes.back(), child);
        record_node(child, nodes.back());
        start_build(nodes.back());
        queue.push_back(child);
        ++st.progress.proposed;
      }
    }
    if (queue.empty()) break;  // the search is over
    int id = queue.front();
    queue.pop_front();
    std::optional<double> v = evaluate(id);
    ++tried;
    NodeResult r;
    r.state = v ? NodeState::kMeasured : StateOf(nodes[id].record->outcome);
    if (r.state == NodeState::kMeasured && !v)
      r.state = NodeState::kCrashed;  // measured without the objective
    r.objective = v.value_or(0);
    policy->Report(id, r);
    // A new best is profiled before its children are proposed, so a proposer
    // that reads diagnoses sees them.
    if (best == id && profile_during_search && res.profiled < options_.profile_limit &&
        !budget->Exhausted())
      profile_node(id, true);
  }
  double search_ended = NowS();
  // Work proposed but not measured is abandoned explicitly (and stays in the
  // store without an outcome, so --resume measures it).
  res.abandoned = static_cast<int>(queue.size());
  for (int id : queue)
    if (nodes[id].build.valid()) nodes[id].build.wait();
  if (res.abandoned > 0)
    Log(fmt::format("{}: {} proposed candidate(s) not measured ({})", lt.task.name, res.abandoned,
                    stop_ ? "stopped" : "budget spent"));
  if (duplicates > 0)
    res.notes.push_back(fmt::format("{} proposal(s) repeated a source already tried", duplicates));
  policy->End();

  // The finalists, re-timed together in one worker process, name the winner.
  std::vector<int> ranked;
  for (int id = 0; id < static_cast<int>(nodes.size()); ++id)
    if (nodes[id].objective && !nodes[id].virtual_root) ranked.push_back(id);
  std::sort(ranked.begin(), ranked.end(),
            [&](int a, int b) { return *nodes[a].objective < *nodes[b].objective; });
  if (!stop_ && options_.finalists > 1 && ranked.size() > 1) {
    progress("re-timing finalists");
    if (static_cast<int>(ranked.size()) > options_.finalists) ranked.resize(options_.finalists);
    EvalOptions fin = eval;
    fin.timing["max_seconds"] = options_.finalist_max_seconds;
    std::vector<EvalRecord> again;
    std::vector<int> ids;
    for (int id : ranked) {
      EvalRecord rec = runner_->Evaluate(lt.task, bundle, nodes[id].proposal.candidate, fin);
      double busy = rec.verify_s + rec.time_s;
      gpu_busy_s_ += busy;
      budget->AddGpuSeconds(busy);
      if (!std::holds_alternative<Measured>(rec.outcome)) {
        res.notes.push_back(fmt::format("finalist {} was not measured again: {}",
                                        nodes[id].proposal.candidate.name,
                                        OutcomeLine(rec.outcome)));
        continue;
      }
      again.push_back(rec);
      ids.push_back(id);
    }
    std::vector<const Measured*> ms;
    for (const auto& r : again) ms.push_back(&std::get<Measured>(r.outcome));
    int w = PickWinner(ms, options_.objective, options_.speed_fraction);
    for (size_t i = 0; i < again.size(); ++i) {
      const Measured& m = *ms[i];
      Json f{{"node", ids[i]},
             {"name", nodes[ids[i]].proposal.candidate.name},
             {"time_ms", m.time_ms.median},
             {"ci_low", m.time_ms.ci_low},
             {"ci_high", m.time_ms.ci_high},
             {"winner", static_cast<int>(i) == w}};
      if (auto s = SpeedupVsEager(m, bundle)) f["speedup_vs_eager"] = *s;
      if (auto s = SpeedupVsCompile(m, bundle)) f["speedup_vs_compile"] = *s;
      if (m.energy_mj_per_call) f["energy_mj"] = *m.energy_mj_per_call;
      res.finalists.push_back(f);
    }
    store_->SetTaskFinalists(run_id, index, res.finalists);
    if (w >= 0) {
      best = ids[w];
      res.best = again[w];
      store_->SetTaskBest(run_id, index, best);
      WriteBest(options_.out, lt.task.name, nodes[best].proposal, &again[w], bundle, run_id, best);
    }
  } else if (!ranked.empty() && options_.objective != Objective::kTime) {
    std::vector<const Measured*> ms;
    for (int id : ranked) ms.push_back(&std::get<Measured>(nodes[id].record->outcome));
    int w = PickWinner(ms, options_.objective, options_.speed_fraction);
    if (w >= 0) best = ranked[w];
  }
  res.best_node = best;
  if (best >= 0) {
    res.best_proposal = nodes[best].proposal;
    if (!res.best && nodes[best].record) res.best = nodes[best].record;
    store_->SetTaskBest(run_id, index, best);
    // The winner is explained: profiled once the search named it (after the
    // budget, like the finalists: finishing work, counted in what was spent).
    if (!stop_ && options_.profile != ProfileMode::kNone) profile_node(best, false);
    res.best_diagnoses = nodes[best].diagnoses;
    if (res.best && !nodes[best].virtual_root)
      if (const auto* m = std::get_if<Measured>(&res.best->outcome)) {
        std::optional<double> x = SpeedupVsEager(*m, bundle);
        if (store_rules::KeepsReference(x)) {
          res.reference_kept = true;
          res.notes.push_back(fmt::format(
              "nothing verified beat eager PyTorch: the best, {}, ran at {:.2f}x; the reference is "
              "kept, and kopt export writes it unchanged",
              nodes[best].proposal.candidate.name, *x));
        }
      }
  }
  res.nodes = static_cast<int>(nodes.size());
  res.status = end;
  store_->SetTaskStatus(run_id, index, end);
  res.capture_s = capture_s;
  res.search_s = search_ended - searched_at;
  res.finish_s = NowS() - search_ended;
  fixed_costs_.Add(capture_s, res.finish_s);
  Log(fmt::format(
      "{}: {:.1f} s: capture {:.1f} s, search {:.1f} s ({} measured), finishing {:.1f} s",
      lt.task.name, res.capture_s + res.search_s + res.finish_s, res.capture_s, res.search_s,
      res.measured + res.failed, res.finish_s));
  progress("done");
  return res;
}

}  // namespace kopt
