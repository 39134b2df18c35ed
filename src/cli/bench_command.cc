// `kopt bench DIR`: every task, its baselines, floor and shipped solutions.
#include <regex>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/context.h"
#include "core/error.h"
#include "loop/tuner.h"
#include "report/bench_report.h"
#include "report/html_report.h"
#include "report/table.h"
#include "store/run_store.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

struct BenchArgs {
  CommonOptions common;
  ContractOverrides contract;  ///< on top of each task's own contract file
  std::string dir = "tasks";
  std::string filter;
  bool compile = true;
  std::string json_out;
  std::string html_out;
  double timed_checks = -1;  ///< < 0: the policy's default
  double max_seconds = 2.0;
};

// One row of the results with what the table does not show: the contract
// each solution was judged under (its second shape), and offline, the build.
struct Row {
  BenchRow row;
  Json contract;  ///< null: the task's contract could not be read
  Json build;     ///< offline runs: the build result; null otherwise
};

std::string SecondShapeText(const Json& contract) {
  if (!contract.is_object() || !contract.contains("second_shape") ||
      contract["second_shape"].empty())
    return "";
  std::string s;
  for (auto it = contract["second_shape"].begin(); it != contract["second_shape"].end(); ++it)
    s += fmt::format("{}{}={}", s.empty() ? "" : " ", it.key(), it.value().get<long long>());
  return s;
}

Json ResultsJson(const std::string& suite, const Json& device, bool gpu,
                 const std::vector<Row>& rows) {
  Json j{{"suite", suite}, {"device", device}, {"gpu", gpu}, {"rows", Json::array()}};
  for (const auto& r : rows) {
    Json jr = ToJson(r.row);
    jr["contract"] = r.contract;
    jr["second_shape"] =
        r.contract.is_object() ? r.contract.value("second_shape", Json::object()) : Json(nullptr);
    if (!r.build.is_null()) jr["build"] = r.build;
    j["rows"].push_back(jr);
  }
  return j;
}

// Every task with solutions, with the second shape its solutions are (or,
// offline, would be) verified on too.
std::string SecondShapeLines(const std::vector<Row>& rows, bool verified) {
  std::string out, last;
  int missing = 0;
  for (const auto& r : rows) {
    if (r.row.solution.empty() || r.row.task == last) continue;
    last = r.row.task;
    std::string shape = SecondShapeText(r.contract);
    if (shape.empty()) ++missing;
    out += fmt::format(
        "  {:<44} {}\n", r.row.task,
        shape.empty() ? "none: add \"second_shape\" to the task's <stem>.contract.json" : shape);
  }
  if (out.empty()) return "";
  std::string head =
      verified ? "Second shapes: every solution was also verified with these module-level sizes of "
                 "its task (the task's contract)"
               : "Second shapes each solution will also be verified on (the task's contract)";
  return fmt::format("\n{}{}:\n{}", head,
                     missing ? fmt::format(", {} task(s) have none", missing) : "", out);
}

// Without a GPU: say so, then do what can be done here — list the suite and
// compile every cuda solution with the real nvcc — and write it to --json
// and --html, marked as run without a GPU.
int RunOffline(const BenchArgs& a, const std::vector<Task>& tasks) {
  fmt::print(
      "No CUDA GPU is visible on this machine, so nothing can be verified or timed; here is the "
      "suite, with every cuda solution compiled.\n\n");
  CommonOptions o = a.common;
  Context ctx = MakeContext(o);
  std::vector<std::pair<std::string, Candidate>> cands;
  for (const auto& t : tasks)
    for (auto& c : FindSolutions(t)) cands.push_back({t.name, c});
  std::vector<BuildRequest> reqs;
  for (const auto& [_, c] : cands)
    if (c.kind == CandidateKind::kCuda) reqs.push_back({c.source, c.name, {}});
  PrintProgress(fmt::format("compiling {} cuda solutions for {}", reqs.size(), ctx.arch));
  std::vector<BuildResult> built = ctx.builder->BuildAll(reqs);
  Table t(
      {"task", "solution", "kind", "build", "seconds", "registers", "spilled B", "second shape"});
  std::vector<Row> rows;
  size_t bi = 0, ci = 0;
  int failures = 0;
  for (const auto& task : tasks) {
    Row base;
    base.row.task = task.name;
    try {
      base.contract = ToJson(ResolveContract(task, a.contract));
    } catch (const Error& e) {
      base.row.verdict = "task error";
      base.row.reason = e.what();
      ++failures;
    }
    std::string shape = base.contract.is_null() ? "contract error" : SecondShapeText(base.contract);
    bool any = false;
    for (; ci < cands.size() && cands[ci].first == task.name; ++ci) {
      any = true;
      const Candidate& c = cands[ci].second;
      Row row = base;
      row.row.solution = c.name;
      row.row.kind = CandidateKindName(c.kind);
      if (c.kind != CandidateKind::kCuda) {
        if (row.row.verdict.empty())
          row.row.verdict = "not run (hybrid: built by the worker at eval)";
        t.AddRow(
            {task.name, c.name, "hybrid", "at eval", "-", "-", "-", shape.empty() ? "-" : shape});
        rows.push_back(row);
        continue;
      }
      const BuildResult& b = built[bi++];
      int regs = 0;
      long spill = 0;
      for (const auto& k : b.resources) {
        regs = std::max(regs, k.registers);
        spill += k.spill_load_bytes + k.spill_store_bytes;
      }
      failures += !b.ok;
      if (row.row.verdict.empty())
        row.row.verdict = b.ok ? "compiled (not run: no GPU)" : "build_failed";
      if (!b.ok) row.row.reason = BuildFailureReason(b.log);
      row.build = ToJson(b);
      t.AddRow({task.name, c.name, "cuda", b.ok ? "ok" : "FAILED",
                fmt::format("{:.2f}", b.compile_s), b.ok ? std::to_string(regs) : "-",
                b.ok ? std::to_string(spill) : "-", shape.empty() ? "-" : shape});
      rows.push_back(row);
    }
    if (!any) {
      if (base.row.verdict.empty()) base.row.verdict = "no solution";
      t.AddRow({task.name, "-", "-", "-", "-", "-", "-", "-"});
      rows.push_back(base);
    }
  }
  fmt::print("{}", t.Render());
  fmt::print(
      "\n{} tasks, {} solutions, {} failed to compile. On a machine with a GPU, `kopt bench {}` "
      "verifies and times them.\n",
      tasks.size(), cands.size(), failures, a.dir);
  fmt::print(
      "Without a GPU, kopt can also verify and time (host clock, no floor) a Python candidate that "
      "uses only PyTorch (`kopt eval TASK CANDIDATE.py --device cpu`), capture a task's signature "
      "and FLOPs (`kopt capture TASK --device cpu`) and diagnose a saved profile (`kopt profile "
      "--replay DIR`).\n");
  Json device{
      {"name",
       fmt::format("no CUDA GPU visible: cuda solutions compiled for {}, nothing verified or timed",
                   ctx.arch)}};
  Json j = ResultsJson(a.dir, device, /*gpu=*/false, rows);
  if (!a.json_out.empty()) {
    WriteJsonFileAtomic(a.json_out, j);
    fmt::print("wrote {}\n", a.json_out);
  }
  if (!a.html_out.empty()) {
    WriteHtmlReport(a.html_out, j);
    fmt::print("wrote {}\n", a.html_out);
  }
  return failures ? 1 : 0;
}

int RunBench(const BenchArgs& a) {
  std::vector<Task> tasks = FindTasks(a.dir);
  if (!a.filter.empty()) {
    std::regex re(a.filter);
    std::erase_if(tasks, [&](const Task& t) { return !std::regex_search(t.path.string(), re); });
  }
  if (tasks.empty())
    throw Error("no KernelBench task files found under " + a.dir +
                ": check the folder (and --filter).");
  if (WantsGpuButNoneVisible(a.common)) return RunOffline(a, tasks);

  Context ctx = MakeContext(a.common);
  ctx.evaluator->Prewarm();
  std::vector<Candidate> all;
  for (const auto& t : tasks)
    for (auto& c : FindSolutions(t)) all.push_back(c);
  PrintProgress(fmt::format("{} tasks, {} solutions; compiling while the worker starts",
                            tasks.size(), all.size()));
  ctx.evaluator->Prebuild(all);

  std::vector<Row> rows;
  std::string json_path = a.json_out;
  auto save = [&] {
    if (json_path.empty() && a.html_out.empty()) return;
    Json j = ResultsJson(a.dir, ToJson(ctx.evaluator->Device()), /*gpu=*/true, rows);
    // After every row: an interruption loses nothing finished.
    if (!json_path.empty()) WriteJsonFileAtomic(json_path, j);
    if (!a.html_out.empty()) WriteHtmlReport(a.html_out, j);
  };
  auto add = [&](const BenchRow& row, const Json& contract) {
    rows.push_back(Row{row, contract, nullptr});
    save();
  };
  auto base_of = [](const Task& task, const TaskBundle& bundle) {
    BenchRow base;
    base.task = task.name;
    if (bundle.eager_ms) base.eager_ms = bundle.eager_ms->median;
    if (bundle.compile_ms) base.compile_ms = bundle.compile_ms->median;
    if (bundle.floor_ms > 0) base.floor_ms = bundle.floor_ms;
    base.flags = bundle.flags;
    return base;
  };
  // Each task is the loop over its shipped solutions: the replay proposer,
  // each solution measured once (a sweep), nothing kept beyond this command.
  auto store = MakeMemoryRunStore();
  size_t index = 0;
  for (const auto& task : tasks) {
    ++index;
    PrintProgress(fmt::format("[{}/{}] {}", index, tasks.size(), task.name));
    BenchRow base;
    base.task = task.name;
    Contract contract;
    try {
      // The task's contract file (second shape included) and the command line's overrides.
      contract = ResolveContract(task, a.contract);
    } catch (const Error& e) {
      base.verdict = "task error";
      base.reason = e.what();
      add(base, nullptr);
      continue;
    }
    Json contract_json = ToJson(contract);
    std::vector<Candidate> sols = FindSolutions(task);
    if (sols.empty()) {
      try {
        base = base_of(task, ctx.evaluator->Bundle(task, /*baselines=*/true, a.compile));
        base.verdict = "no solution";
      } catch (const Error& e) {
        base.verdict = "task error";
        base.reason = e.what();
      }
      add(base, contract_json);
      continue;
    }
    LoopOptions o;
    o.proposer = "replay";
    for (const auto& c : sols) o.proposer_options.replay_paths.push_back(c.path);
    o.search = "sweep";
    o.finalists = 0;
    o.baselines = true;
    o.compile_baseline = a.compile;
    o.eval.timing["max_seconds"] = a.max_seconds;
    if (a.timed_checks >= 0) o.eval.policy.timed_check_p = a.timed_checks;
    o.arch = ctx.arch;
    o.scratch = ctx.cache_dir / "loop";
    Tuner tuner(ctx.evaluator.get(), store.get(), o);
    int added = 0;
    tuner.on_measurement.push_back([&](const NodeEvent& e) {
      if (!e.record) return;
      const EvalRecord& rec = *e.record;
      const TaskBundle& bundle = *e.bundle;
      BenchRow row = base_of(task, bundle);
      row.solution = e.proposal->candidate.name;
      row.kind = CandidateKindName(e.proposal->candidate.kind);
      row.verdict = OutcomeName(rec.outcome);
      row.source_to_verdict_s = rec.source_to_verdict_s;
      if (const auto* m = std::get_if<Measured>(&rec.outcome)) {
        row.time_ms = m->time_ms.median;
        if (auto ev = m->EagerMs()) row.eager_ms = *ev;  // interleaved or clean, the faster
        row.speedup_vs_eager = SpeedupVsEager(*m, bundle);
        row.speedup_vs_compile = SpeedupVsCompile(*m, bundle);
        if (bundle.floor_ms > 0 && m->time_ms.median > 0)
          row.floor_fraction = bundle.floor_ms / m->time_ms.median;
        row.energy_mj = m->energy_mj_per_call;
        if (!m->warnings.empty()) row.reason = m->warnings.front();
      } else {
        row.reason = OutcomeLine(rec.outcome).substr(0, 300);
      }
      PrintProgress(
          fmt::format("    {}: {}", row.solution, OutcomeLine(rec.outcome).substr(0, 200)));
      add(row, contract_json);
      ++added;
    });
    tuner.on_log = [](const std::string& line) { PrintProgress(line); };
    LoopResult r = tuner.Run({LoopTask{task, contract, std::nullopt}});
    if (!r.tasks.empty() && r.tasks[0].status == TaskStatus::kFailed && added == 0) {
      base.verdict = "task error";
      base.reason = r.tasks[0].error;
      add(base, contract_json);
    }
  }
  std::vector<BenchRow> table;
  for (const auto& r : rows) table.push_back(r.row);
  fmt::print("\n{}", RenderBenchTable(table));
  fmt::print("{}", SecondShapeLines(rows, /*verified=*/true));
  const DeviceInfo& dev = ctx.evaluator->Device();
  fmt::print(
      "\n{} tasks on {} (torch {}); eager and vs-eager are interleaved with the solution in one "
      "session; "
      "compile is the cached torch.compile baseline.\n",
      tasks.size(), dev.name, dev.torch_version);
  if (!json_path.empty()) fmt::print("wrote {}\n", json_path);
  if (!a.html_out.empty()) fmt::print("wrote {}\n", a.html_out);
  return 0;
}

}  // namespace

void AddBenchCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app->add_subcommand(
      "bench",
      "Run a task suite: baselines, floor and every shipped solution, as a table and JSON");
  cmd->add_option("dir", args->dir,
                  "Folder of KernelBench-format tasks (solutions in <level>/solutions/)")
      ->capture_default_str();
  cmd->add_option("--filter", args->filter, "Only tasks whose path matches this regular expression")
      ->check(ValidRegex());
  cmd->add_flag("!--no-compile", args->compile,
                "Skip torch.compile baselines (they take a while to compile)");
  cmd->add_option("--json", args->json_out,
                  "Write the results to this file (updated after every row)");
  cmd->add_option("--html", args->html_out,
                  "Write an HTML report with charts to this file (updated after every row)");
  cmd->add_option("--max-seconds", args->max_seconds, "Timing budget per contender")
      ->capture_default_str()
      ->check(PositiveNumber());
  cmd->add_option(
         "--timed-checks", args->timed_checks,
         "Chance that each timed call is checked after the fact (default 0.05; 1 checks every one)")
      ->check(CLI::Range(0.0, 1.0));
  AddContractOptions(cmd, &args->contract);
  AddCommonOptions(cmd, &args->common);
  cmd->callback([args, exit_code] { *exit_code = RunBench(*args); });
}

}  // namespace kopt
