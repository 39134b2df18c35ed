// `kopt optimize TASK...`: search for a faster verified implementation of
// each task within a budget, live progress, a final table, a durable run.
#include <csignal>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/context.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "diagnose/analysis_tool.h"
#include "loop/learned_wins.h"
#include "loop/tuner.h"
#include "propose/knobs.h"
#include "propose/memory_query.h"
#include "report/progress.h"
#include "report/table.h"
#include "run/replay_runner.h"
#include "run/worker_channel.h"
#include "store/run_store.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct OptimizeArgs {
  CommonOptions common;
  ContractOverrides contract;
  std::vector<std::string> tasks;
  std::string from;
  std::string proposer = "expert";
  std::vector<std::string> candidates;
  std::string budget;
  std::string objective = "time";
  std::string search;
  std::uint64_t seed = 1;
  std::string out;
  std::string resume;
  std::string store;
  std::string replay;
  std::string json_out;
  double max_seconds = 0.3;
  double finalist_seconds = 1.0;
  int finalists = 3;
  int pipeline = 4;
  std::string profile = "auto";
  int profile_limit = 3;
  double timed_checks = -1;  ///< < 0: the policy's default
  bool compile = true;
  bool shipped = true;  ///< expert: offer the tasks' hand-written solutions
  /// Options given on the command line that a resumed run takes from the
  /// store instead (filled by the command's callback).
  std::vector<std::string> ignored_on_resume;
  // --proposer llm
  std::string llm;  ///< provider:model
  std::string llm_base_url;
  std::string llm_command;
  std::string cutlass;
  std::string memory;  ///< the knowledge base (default DefaultMemoryPath)
  int llm_repairs = 2;
};

constexpr const char* kDefaultTask = "tasks/level1/10_sum_dim.py";

std::atomic<Tuner*> g_tuner{nullptr};

void OnInterrupt(int) {
  if (Tuner* t = g_tuner.load()) t->RequestStop();
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process
}

std::vector<Task> ExpandTasks(const std::vector<std::string>& args, const fs::path& root) {
  std::vector<Task> out;
  std::vector<std::string> list = args;
  if (list.empty()) list.push_back((root / kDefaultTask).string());
  for (const auto& a : list) {
    if (fs::is_directory(a)) {
      for (auto& t : FindTasks(a)) out.push_back(t);
    } else {
      out.push_back(LoadTask(a));
    }
  }
  if (out.empty())
    throw Error("no KernelBench task files found in the given folders: pass task files (.py).");
  return out;
}

/// The expert proposer's files: the template library and the diagnosis-to-move table.
ProposerOptions ExpertFiles(const fs::path& repo_root) {
  ProposerOptions po;
  po.kernels_dir = repo_root / "kernels";
  po.moves_file = repo_root / "data" / "expert" / "moves.json";
  po.knowledge_dir = repo_root / "knowledge";
  po.prompts_dir = repo_root / "data" / "llm" / "prompts";
  return po;
}

/// The proposers' files and the LLM's settings from the command line. For
/// --proposer llm, says in one sentence what to set when no model is
/// configured (the key itself only ever comes from the environment).
ProposerOptions ProposerFiles(const OptimizeArgs& a, const fs::path& repo_root,
                              const fs::path& cache) {
  ProposerOptions po = ExpertFiles(repo_root);
  po.cache_dir = cache;
  po.knowledge_db = a.memory.empty() ? DefaultMemoryPath(cache) : fs::path(a.memory);
  po.llm.model = a.llm;
  po.llm.base_url = a.llm_base_url;
  po.llm.command = a.llm_command;
  po.cutlass_dir = a.cutlass;
  po.python = PythonFor(a.common);
  po.repair_cap = a.llm_repairs;
  po.shipped_solutions = a.shipped;
  if (a.proposer == "llm") {
    const char* env = std::getenv("KOPT_LLM");
    if (a.llm.empty() && a.llm_command.empty() && (!env || !*env))
      throw Error(
          "--proposer llm needs a model: set KOPT_LLM and OPENAI_API_KEY, or pass --llm "
          "provider:model (with --llm-base-url for a local server, or --llm-command).");
    LlmConfigFromEnv(po.llm);  // a bad setting is reported now, not after capture
  }
  return po;
}

std::string Ratio(const std::optional<double>& r) { return r ? FormatRatio(*r) : std::string("-"); }

// Without a GPU: say so, then show what the search would do — the tuner's
// space for each task and its first proposals, compiled with the real nvcc.
int RunOffline(const OptimizeArgs& a, const std::vector<Task>& tasks) {
  fmt::print(
      "No CUDA GPU is visible on this machine, so nothing can be measured; here is what kopt "
      "optimize would "
      "search, with the first candidates compiled by nvcc.\n\n");
  Context ctx = MakeContext(a.common);
  // The expert plans from the op graph: without a GPU it is recorded on
  // PyTorch's meta device (shapes and dataflow, no arithmetic) by a CPU worker.
  std::unique_ptr<WorkerChannel> graph_worker;
  if (a.proposer == "expert") {
    WorkerOptions wo;
    wo.repo_root = ctx.repo_root;
    wo.device = "cpu";
    wo.python = a.common.python;
    wo.cache_dir = ctx.cache_dir;
    graph_worker = MakeProcessWorker(wo);
  }
  Table t({"task", "proposer", "candidate", "move", "build", "registers"});
  int failures = 0;
  for (const Task& task : tasks) {
    std::unique_ptr<Proposer> p;
    ProposerOptions po = ProposerFiles(a, ctx.repo_root, ctx.cache_dir);
    for (const auto& c : a.candidates) po.replay_paths.push_back(c);
    p = MakeProposer(a.proposer, po);
    ProposeContext pc;
    pc.task = task;
    TaskBundle empty;
    if (graph_worker) {
      WorkerReply r = graph_worker->Call(Json{{"op", "graph"}, {"task", task.path.string()}}, 600);
      if (r.ok() && r.body.contains("graph"))
        empty.graph = r.body.at("graph");
      else
        fmt::print(
            "{}: the op graph could not be recorded on the meta device ({}), so the plan has only "
            "shipped "
            "solutions.\n",
            task.name, r.message.empty() ? "the worker did not answer" : r.message);
    }
    pc.bundle = &empty;
    pc.arch = ctx.arch;
    if (!a.from.empty()) pc.from = LoadCandidate(a.from);
    try {
      p->Begin(pc);
    } catch (const Error& e) {
      t.AddRow({task.name, a.proposer, "-", e.what(), "-", "-"});
      continue;
    }
    std::vector<Proposal> props;
    if (auto r = p->Root()) props.push_back(*r);
    ParentView root;
    if (!props.empty()) {
      root.candidate = props[0].candidate;
      root.detail = props[0].detail;
    }
    for (auto& c : p->Propose(root, 3)) props.push_back(c);
    if (!a.out.empty()) {  // the candidates themselves, e.g. to rank later with --proposer replay
      fs::path dir = fs::path(a.out) / task.name;
      fs::create_directories(dir);
      for (const auto& pr : props) {
        std::string stem = pr.candidate.name;
        for (char& ch : stem)
          if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
        WriteTextFileAtomic(
            dir / (stem + (pr.candidate.kind == CandidateKind::kCuda ? ".cu" : ".py")),
            pr.candidate.source);
      }
    }
    std::vector<BuildRequest> reqs;
    for (const auto& pr : props)
      if (pr.candidate.kind == CandidateKind::kCuda)
        reqs.push_back({pr.candidate.source, pr.candidate.name, {}});
    std::vector<BuildResult> built = ctx.builder->BuildAll(reqs);
    size_t bi = 0;
    for (const auto& pr : props) {
      std::string build = "hybrid: at eval", regs = "-";
      if (pr.candidate.kind == CandidateKind::kCuda) {
        const BuildResult& b = built[bi++];
        build = b.ok ? fmt::format("ok, {:.1f} s", b.compile_s) : "FAILED";
        failures += !b.ok;
        int r = 0;
        for (const auto& k : b.resources) r = std::max(r, k.registers);
        if (b.ok) regs = std::to_string(r);
      }
      t.AddRow({task.name, p->Name(), pr.candidate.name, pr.move.empty() ? "(root)" : pr.move,
                build, regs});
    }
    for (const auto& n : p->Notes()) fmt::print("{}: {}\n", task.name, n);
  }
  fmt::print("\n{}", t.Render());
  if (!a.out.empty()) fmt::print("\nwrote the candidates above under {}\n", a.out);
  fmt::print(
      "\nOn a machine with a GPU, the same command measures them and searches on. Without one: "
      "--device cpu "
      "optimizes hybrid (PyTorch) candidates on the CPU, and --replay RUN re-runs a search "
      "recorded on a GPU "
      "(see kopt runs).\n");
  return failures ? 1 : 0;
}

void PrintResult(const LoopResult& r, const fs::path& store_path) {
  Table t({"task", "status", "best candidate", "ms", "vs eager", "vs compile", "measured", "failed",
           "floor"});
  for (const auto& task : r.tasks) {
    std::string name = task.best_proposal ? task.best_proposal->candidate.name : "-";
    std::string ms = "-", eager = "-", compile = "-", floor = "-";
    if (task.best)
      if (const auto* m = std::get_if<Measured>(&task.best->outcome)) {
        ms = FormatMs(m->time_ms.median);
        eager = Ratio(task.bundle ? SpeedupVsEager(*m, *task.bundle) : m->SpeedupVsEager());
        compile = Ratio(task.bundle ? SpeedupVsCompile(*m, *task.bundle) : m->SpeedupVsCompile());
        if (task.bundle && task.bundle->floor_ms > 0)
          floor = FormatPercent(task.bundle->floor_ms / m->time_ms.median);
      }
    if (task.reference_kept) name = "reference kept (best: " + name + ")";
    if (task.status == TaskStatus::kFailed) name = task.error.substr(0, 60);
    t.AddRow({task.name, TaskStatusName(task.status), name, ms, eager, compile,
              std::to_string(task.measured), std::to_string(task.failed), floor});
  }
  fmt::print("\n{}", t.Render());
  // Verification and timing only: profiling is counted on its own.
  double gpu_min = (r.gpu_busy_s - r.profile_s) / 60.0;
  fmt::print("\nrun {} ({}): {}\n", r.run_id, RunStatusName(r.status), r.note);
  fmt::print("spent {} of {}; the GPU was busy {:.0f}% of the wall time", DescribeSpent(r.spent),
             DescribeLimits(r.limits), r.wall_s > 0 ? 100 * r.gpu_busy_s / r.wall_s : 0.0);
  if (r.profile_s > 0) fmt::print(" ({:.0f} s of it profiling)", r.profile_s);
  if (gpu_min > 0)
    fmt::print(", {:.0f} candidates verified per GPU-minute of verifying and timing",
               r.spent.candidates / gpu_min);
  fmt::print("\nstore {}; kopt show {}, kopt report {}, kopt export {}\n", store_path.string(),
             r.run_id, r.run_id, r.run_id);
  for (const auto& task : r.tasks)
    for (const auto& n : task.notes) fmt::print("note       {}: {}\n", task.name, n);
  // What the winner's profile says, largest estimated gain first.
  for (const auto& task : r.tasks) {
    std::vector<Diagnosis> ds = task.best_diagnoses;
    std::stable_sort(ds.begin(), ds.end(), [](const Diagnosis& x, const Diagnosis& y) {
      return x.CallGain() > y.CallGain();
    });
    for (size_t i = 0; i < ds.size() && i < 2; ++i)
      fmt::print("diagnosis  {}: {} ({}, up to {:.0f}% of the time): {}\n", task.name, ds[i].tool,
                 ds[i].severity, 100 * ds[i].CallGain(), ds[i].advice);
  }
}

Json ResultJson(const LoopResult& r) {
  Json tasks = Json::array();
  for (const auto& t : r.tasks) {
    Json j{
        {"task", t.name},
        {"status", TaskStatusName(t.status)},
        {"error", t.error},
        {"best_node", t.best_node},
        {"nodes", t.nodes},
        {"measured", t.measured},
        {"failed", t.failed},
        {"abandoned", t.abandoned},
        {"finalists", t.finalists},
        {"notes", t.notes},
        {"profiled", t.profiled},
        {"reference_kept", t.reference_kept},
        {"best_diagnoses", ToJson(t.best_diagnoses)},
        {"phase_s", {{"capture", t.capture_s}, {"search", t.search_s}, {"finishing", t.finish_s}}}};
    if (t.best_proposal) j["best_candidate"] = t.best_proposal->candidate.name;
    if (t.best) j["best"] = ToJson(*t.best);
    if (t.bundle) {
      if (t.bundle->eager_ms) j["eager_ms"] = t.bundle->eager_ms->median;
      if (t.bundle->compile_ms) j["compile_ms"] = t.bundle->compile_ms->median;
      j["floor_ms"] = t.bundle->floor_ms;
      j["floor_bound"] = t.bundle->floor_bound;
    }
    tasks.push_back(j);
  }
  return Json{{"run", r.run_id},
              {"status", RunStatusName(r.status)},
              {"note", r.note},
              {"spent", ToJson(r.spent)},
              {"limits", ToJson(r.limits)},
              {"wall_s", r.wall_s},
              {"gpu_busy_s", r.gpu_busy_s},
              {"profile_s", r.profile_s},
              {"tasks", tasks}};
}

int RunOptimize(const OptimizeArgs& a) {
  fs::path cache = a.common.cache_dir.empty() ? DefaultCacheDir() : fs::path(a.common.cache_dir);
  fs::path store_path = RunStorePath(a.common, a.store);
  std::vector<Task> tasks;
  if (!a.resume.empty() && !a.ignored_on_resume.empty())
    PrintProgress(fmt::format("--resume continues with the run's own options; ignored: {}",
                              fmt::join(a.ignored_on_resume, ", ")));
  // --replay RUN needs the tasks named (the run's own options are not restored).
  bool tasks_from_replayed_run = !a.replay.empty() && a.tasks.empty() && !fs::exists(a.replay);
  if (a.resume.empty() && !tasks_from_replayed_run) tasks = ExpandTasks(a.tasks, FindRepoRoot());
  if (!a.from.empty() && tasks.size() > 1)
    throw Error("--from starts one task's search from your kernel: give exactly one task with it.");
  if (a.replay.empty() && WantsGpuButNoneVisible(a.common)) {
    if (!a.resume.empty())
      throw Error("no CUDA GPU is visible on this machine: resume run " + a.resume +
                  " where a GPU is, or replay it with --replay.");
    return RunOffline(a, tasks);
  }
  ProposerOptions proposer_options = ProposerFiles(a, FindRepoRoot(), cache);
  auto store = MakeSqliteRunStore(store_path);

  LoopOptions o;
  o.proposer = a.proposer;
  o.proposer_options = proposer_options;
  for (const auto& c : a.candidates) o.proposer_options.replay_paths.push_back(fs::absolute(c));
  o.search = a.search.empty() ? (a.proposer == "replay" ? "sweep" : "mcts") : a.search;
  o.objective = ParseObjective(a.objective);
  o.budget = a.budget.empty() ? DefaultBudget(tasks.size()) : ParseBudget(a.budget);
  o.seed = a.seed;
  o.pipeline = a.pipeline;
  o.finalists = a.finalists;
  o.finalist_max_seconds = a.finalist_seconds;
  o.profile = ParseProfileMode(a.profile);
  o.profile_limit = a.profile_limit;
  o.compile_baseline = a.compile;
  o.eval.timing["max_seconds"] = a.max_seconds;
  if (a.timed_checks >= 0) o.eval.policy.timed_check_p = a.timed_checks;
  if (o.objective != Objective::kTime)
    o.eval.timing["energy"] = true;
  else
    o.eval.timing["energy"] = false;
  o.out = a.out;
  o.scratch = cache / "loop";
  o.argv = Json(CommandLine());

  Context ctx;
  std::unique_ptr<Runner> replay;
  Runner* runner = nullptr;
  if (!a.replay.empty()) {
    ReplayData d;
    if (fs::exists(a.replay)) {
      d = ReplayFromResultFiles({a.replay});
    } else {
      auto run = store->FindRun(a.replay);
      if (!run)
        throw Error("--replay " + a.replay + " is neither a results file nor a run in " +
                    store_path.string() + ": see kopt runs.");
      d = ReplayFromRun(*store, run->id);
      if (tasks_from_replayed_run) {
        std::vector<std::string> paths;
        for (const TaskRecord& t : store->ListTasks(run->id)) paths.push_back(t.path);
        throw Error(
            fmt::format("--replay {} answers a new search from that run's records, so name its "
                        "tasks and the options it ran with (its tasks: {}; kopt show {} lists "
                        "its options).",
                        a.replay, fmt::join(paths, " "), run->id));
      }
    }
    replay = MakeReplayRunner(std::move(d));
    runner = replay.get();
  } else {
    ctx = MakeContext(a.common);
    ctx.evaluator->Prewarm();
    o.arch = ctx.arch;
    runner = ctx.evaluator.get();
  }
  ProgressDisplay display(stderr, IsTerminal(stderr));
  runner->on_progress = [&](const std::string& line) { display.Note(line); };

  Tuner tuner(runner, store.get(), o);
  // The profile stage runs Nsight Compute beside the (idle) workers.
  std::unique_ptr<NodeProfiler> profiler;
  if (!replay && a.common.device.rfind("cuda", 0) == 0) {
    NodeProfilerConfig pc;
    pc.runner = runner;
    pc.gpu = a.common.device;
    pc.python = PythonFor(a.common);
    pc.repo_root = ctx.repo_root;
    pc.cache_dir = ctx.cache_dir;
    pc.arch = ctx.arch;
    pc.data_dir = DiagnoseDataDir();
    pc.progress = [&](const std::string& line) { display.Note("profiling: " + line); };
    profiler = MakeProcessNodeProfiler(pc);
    tuner.SetProfiler(profiler.get());
  }
  tuner.on_progress = [&](const TaskProgress& p) { display.Update(p); };
  tuner.on_log = [&](const std::string& line) { display.Note(line); };
  g_tuner.store(&tuner);
  std::signal(SIGINT, OnInterrupt);
  LoopResult r;
  try {
    if (!a.resume.empty()) {
      std::optional<BudgetLimits> limits;
      if (!a.budget.empty()) limits = ParseBudget(a.budget);
      r = tuner.Resume(a.resume, limits);
    } else {
      std::vector<LoopTask> lts;
      for (const Task& t : tasks) {
        LoopTask lt;
        lt.task = t;
        lt.contract = ResolveContract(t, a.contract);
        if (!a.from.empty()) lt.from = LoadCandidate(a.from);
        lts.push_back(lt);
      }
      r = tuner.Run(lts);
    }
  } catch (...) {
    g_tuner.store(nullptr);
    std::signal(SIGINT, SIG_DFL);
    throw;
  }
  g_tuner.store(nullptr);
  std::signal(SIGINT, SIG_DFL);
  display.Finish();
  PrintResult(r, store_path);
  // Long-term memory learns from the run's verified, measured wins.
  std::string why;
  if (auto kb = OpenProposerMemory(proposer_options, &why)) {
    LearnedSummary learned = AdmitLearnedWins(*store, r.run_id, kb.get());
    if (learned.offered > 0)
      fmt::print("memory     {} of {} win(s) over their parent admitted to {}\n", learned.admitted,
                 learned.offered, proposer_options.knowledge_db.string());
  } else {
    fmt::print("memory     nothing learned: {}\n", why);
  }
  if (!a.json_out.empty()) {
    WriteJsonFileAtomic(a.json_out, ResultJson(r));
    fmt::print("wrote {}\n", a.json_out);
  }
  bool any_ok = std::any_of(r.tasks.begin(), r.tasks.end(),
                            [](const TaskResult& t) { return t.best.has_value(); });
  return any_ok ? 0 : 1;
}

}  // namespace

void AddOptimizeCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<OptimizeArgs>();
  CLI::App* cmd = app->add_subcommand(
      "optimize",
      "Search for a faster verified implementation of each task within a budget (the main job)");
  cmd->add_option("tasks", args->tasks,
                  fmt::format("KernelBench-format task files or folders (default: {} of the suite)",
                              kDefaultTask));
  cmd->add_option("--from", args->from,
                  "Start from your own kernel (.cu or ModelNew .py): the root to beat");
  cmd->add_option(
         "--proposer", args->proposer,
         "Where candidates come from: expert (the planner's fused kernels, kernels/ "
         "templates and shipped solutions, then moves keyed to diagnoses and knob tuning), "
         "tune (the knobs of the task's shipped solution or --from), replay "
         "(--candidates files and folders), llm (a model writes them: --llm)")
      ->capture_default_str();
  cmd->add_option("--candidates", args->candidates,
                  "Files or folders of candidates for --proposer replay");
  cmd->add_option(
      "--budget", args->budget,
      fmt::format(
          "What the run may spend: 10m, 40 (candidates), or wall=30m,gpu=10m,candidates=200 "
          "(default {:g} min, or {:g} s per task when that is more; on --resume, the run's own "
          "unless given)",
          kDefaultWallS / 60, kDefaultWallPerTaskS));
  cmd->add_option("--objective", args->objective,
                  "time, energy, or energy-at-speed (least energy within 3% of "
                  "the best time)")
      ->capture_default_str();
  cmd->add_option("--search", args->search,
                  "mcts (default for tune), sweep (default for replay: each candidate once), "
                  "greedy, beam, random");
  cmd->add_option("--seed", args->seed, "Seed of the search and the proposer")
      ->capture_default_str();
  cmd->add_option("--out", args->out,
                  "Write each task's best candidate here as it is found (<out>/<task>/best.*)");
  cmd->add_option("--resume", args->resume,
                  "Continue a run (its id, a unique prefix, or last: the newest; see kopt runs)");
  cmd->add_option("--store", args->store,
                  "The run store (default: $KOPT_RUNS, else <cache>/runs.db)");
  cmd->add_option(
      "--replay", args->replay,
      "Measure nothing: answer from a recorded run (id) or results file, judged by today's policy");
  cmd->add_option("--json", args->json_out,
                  "Write the result (every task's winner and finalists) to this file");
  cmd->add_option("--max-seconds", args->max_seconds,
                  "Timing budget of each candidate during the search")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--finalists", args->finalists,
                  "The best candidates re-timed together at the end (0: none)")
      ->check(CLI::Range(0, 50))
      ->capture_default_str();
  cmd->add_option("--finalist-seconds", args->finalist_seconds, "Timing budget of each finalist")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option(
         "--timed-checks", args->timed_checks,
         "Chance that each timed call is checked after the fact (default 0.05; 1 checks every one)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--pipeline", args->pipeline, "Candidates compiled ahead of the GPU")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--profile", args->profile,
                  "When nodes are profiled with Nsight Compute and diagnosed: auto (each new best "
                  "when the proposer reads diagnoses, else the winner), best, winner, none")
      ->check(CLI::IsMember({"auto", "best", "winner", "none"}))
      ->capture_default_str();
  cmd->add_option("--profile-limit", args->profile_limit,
                  "Nodes per task profiled during the search (the winner's profile is extra)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--llm", args->llm,
                  "--proposer llm: the model as provider:model (openai:gpt-4.1, "
                  "anthropic:claude-sonnet-4-5; default $KOPT_LLM); keys come from "
                  "OPENAI_API_KEY / ANTHROPIC_API_KEY only");
  cmd->add_option("--llm-base-url", args->llm_base_url,
                  "--proposer llm: the endpoint (e.g. http://127.0.0.1:8000/v1 for vLLM)");
  cmd->add_option("--llm-command", args->llm_command,
                  "--proposer llm: a command that reads a request on stdin (provider exec)");
  cmd->add_option("--llm-repairs", args->llm_repairs,
                  "--proposer llm: repairs asked for per failed candidate")
      ->check(CLI::Range(0, 10))
      ->capture_default_str();
  cmd->add_option("--cutlass", args->cutlass,
                  "--proposer llm: a CUTLASS tree the model may search (default: the installed "
                  "nvidia-cutlass package's)");
  cmd->add_option("--memory", args->memory,
                  "The knowledge base the proposers read and the run's wins go to (default "
                  "$KOPT_MEMORY, else <cache>/memory.db)");
  cmd->add_flag("!--no-shipped", args->shipped,
                "Leave the tasks' hand-written solutions (solutions/ beside a task) out of the "
                "expert's plan: what the planner and templates reach alone");
  cmd->add_flag("!--no-compile", args->compile,
                "Skip the torch.compile baseline (it takes a while to compile)");
  AddContractOptions(cmd, &args->contract);
  AddCommonOptions(cmd, &args->common);
  cmd->callback([args, exit_code, cmd] {
    for (const char* name : {"--max-seconds", "--finalists", "--finalist-seconds", "--objective",
                             "--search", "--seed", "--proposer", "--candidates", "--from",
                             "--timed-checks", "--profile", "--profile-limit", "--no-shipped"})
      if (cmd->count(name) > 0) args->ignored_on_resume.push_back(name);
    if (!args->tasks.empty()) args->ignored_on_resume.push_back("the task list");
    *exit_code = RunOptimize(*args);
  });
}

}  // namespace kopt
