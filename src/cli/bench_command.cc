// `kopt bench DIR`: every task, its baselines, floor and shipped solutions.
#include <regex>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/context.h"
#include "core/error.h"
#include "report/bench_report.h"
#include "report/html_report.h"
#include "report/table.h"
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
  double max_seconds = 2.0;
};

// Without a GPU: say so, then do what can be done here — list the suite and
// compile every cuda solution with the real nvcc.
int RunOffline(const BenchArgs& a, const std::vector<Task>& tasks) {
  fmt::print("No CUDA GPU is visible on this machine, so nothing can be timed; here is the suite, with every "
             "cuda solution compiled.\n\n");
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
  Table t({"task", "solution", "kind", "build", "seconds", "registers", "spilled B"});
  size_t bi = 0, ci = 0;
  int failures = 0;
  for (const auto& task : tasks) {
    bool any = false;
    for (; ci < cands.size() && cands[ci].first == task.name; ++ci) {
      any = true;
      const Candidate& c = cands[ci].second;
      if (c.kind != CandidateKind::kCuda) {
        t.AddRow({task.name, c.name, "hybrid", "at eval", "-", "-", "-"});
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
      t.AddRow({task.name, c.name, "cuda", b.ok ? "ok" : "FAILED", fmt::format("{:.2f}", b.compile_s),
                b.ok ? std::to_string(regs) : "-", b.ok ? std::to_string(spill) : "-"});
    }
    if (!any) t.AddRow({task.name, "-", "-", "-", "-", "-", "-"});
  }
  fmt::print("{}", t.Render());
  fmt::print("\n{} tasks, {} solutions, {} failed to compile. On a machine with a GPU, `kopt bench {}` times them.\n",
             tasks.size(), cands.size(), failures, a.dir);
  return failures ? 1 : 0;
}

int RunBench(const BenchArgs& a) {
  std::vector<Task> tasks = FindTasks(a.dir);
  if (!a.filter.empty()) {
    std::regex re(a.filter);
    std::erase_if(tasks, [&](const Task& t) { return !std::regex_search(t.path.string(), re); });
  }
  if (tasks.empty()) throw Error("no KernelBench task files found under " + a.dir + ": check the folder (and --filter).");
  if (WantsGpuButNoneVisible(a.common)) return RunOffline(a, tasks);

  Context ctx = MakeContext(a.common);
  ctx.evaluator->Prewarm();
  std::vector<Candidate> all;
  for (const auto& t : tasks)
    for (auto& c : FindSolutions(t)) all.push_back(c);
  PrintProgress(fmt::format("{} tasks, {} solutions; compiling while the worker starts", tasks.size(), all.size()));
  ctx.evaluator->Prebuild(all);

  EvalOptions opt;
  opt.timing["max_seconds"] = a.max_seconds;
  std::vector<BenchRow> rows;
  std::string json_path = a.json_out;
  auto save = [&] {
    if (json_path.empty() && a.html_out.empty()) return;
    Json j{{"suite", a.dir}, {"device", ToJson(ctx.evaluator->Device())}, {"rows", Json::array()}};
    for (const auto& r : rows) j["rows"].push_back(ToJson(r));
    // After every row: an interruption loses nothing finished.
    if (!json_path.empty()) WriteJsonFileAtomic(json_path, j);
    if (!a.html_out.empty()) WriteHtmlReport(a.html_out, j);
  };
  size_t index = 0;
  for (const auto& task : tasks) {
    ++index;
    BenchRow base;
    base.task = task.name;
    TaskBundle bundle;
    try {
      PrintProgress(fmt::format("[{}/{}] {}", index, tasks.size(), task.name));
      bundle = ctx.evaluator->Bundle(task, /*baselines=*/true, a.compile);
    } catch (const Error& e) {
      base.verdict = "task error";
      base.reason = e.what();
      rows.push_back(base);
      save();
      continue;
    }
    if (bundle.eager_ms) base.eager_ms = bundle.eager_ms->median;
    if (bundle.compile_ms) base.compile_ms = bundle.compile_ms->median;
    if (bundle.floor_ms > 0) base.floor_ms = bundle.floor_ms;
    base.flags = bundle.flags;
    try {
      opt.contract = ResolveContract(task, a.contract);
    } catch (const Error& e) {
      base.verdict = "task error";
      base.reason = e.what();
      rows.push_back(base);
      save();
      continue;
    }
    std::vector<Candidate> sols = FindSolutions(task);
    if (sols.empty()) {
      base.verdict = "no solution";
      rows.push_back(base);
      save();
      continue;
    }
    for (const auto& c : sols) {
      BenchRow row = base;
      row.solution = c.name;
      row.kind = CandidateKindName(c.kind);
      EvalRecord rec;
      try {
        rec = ctx.evaluator->Evaluate(task, bundle, c, opt);
      } catch (const Error& e) {
        row.verdict = "task error";
        row.reason = e.what();
        rows.push_back(row);
        save();
        continue;
      }
      row.verdict = OutcomeName(rec.outcome);
      row.source_to_verdict_s = rec.source_to_verdict_s;
      if (const auto* m = std::get_if<Measured>(&rec.outcome)) {
        row.time_ms = m->time_ms.median;
        if (auto e = m->EagerMs()) row.eager_ms = *e;  // interleaved or clean, the faster
        row.speedup_vs_eager = m->SpeedupVsEager();
        if (bundle.compile_ms && m->time_ms.median > 0)
          row.speedup_vs_compile = bundle.compile_ms->median / m->time_ms.median;
        if (bundle.floor_ms > 0 && m->time_ms.median > 0) row.floor_fraction = bundle.floor_ms / m->time_ms.median;
        row.energy_mj = m->energy_mj_per_call;
        if (!m->warnings.empty()) row.reason = m->warnings.front();
      } else {
        std::string line = OutcomeLine(rec.outcome);
        row.reason = line.substr(0, 300);
      }
      PrintProgress(fmt::format("    {}: {}", c.name, OutcomeLine(rec.outcome).substr(0, 200)));
      rows.push_back(row);
      save();
    }
  }
  fmt::print("\n{}", RenderBenchTable(rows));
  const DeviceInfo& dev = ctx.evaluator->Device();
  fmt::print("\n{} tasks on {} (torch {}); eager and vs-eager are interleaved with the solution in one session; "
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
      "bench", "Run a task suite: baselines, floor and every shipped solution, as a table and JSON");
  cmd->add_option("dir", args->dir, "Folder of KernelBench-format tasks (solutions in <level>/solutions/)")
      ->capture_default_str();
  cmd->add_option("--filter", args->filter, "Only tasks whose path matches this regular expression");
  cmd->add_flag("!--no-compile", args->compile, "Skip torch.compile baselines (they take a while to compile)");
  cmd->add_option("--json", args->json_out, "Write the results to this file (updated after every row)");
  cmd->add_option("--html", args->html_out, "Write an HTML report with charts to this file (updated after every row)");
  cmd->add_option("--max-seconds", args->max_seconds, "Timing budget per contender")->capture_default_str();
  AddContractOptions(cmd, &args->contract);
  AddCommonOptions(cmd, &args->common);
  cmd->callback([args, exit_code] { *exit_code = RunBench(*args); });
}

}  // namespace kopt
