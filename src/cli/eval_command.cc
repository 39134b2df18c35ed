// `kopt eval TASK CANDIDATE`: build, verify and time one candidate.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/context.h"
#include "loop/tuner.h"
#include "store/run_store.h"
#include "core/error.h"
#include "report/html_report.h"
#include "report/table.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

struct EvalArgs {
  CommonOptions common;
  ContractOverrides contract;
  std::string task;
  std::vector<std::string> candidates;
  std::string tolerance = "calibrated";
  std::vector<int> seeds = {11, 12, 13};
  bool compile = false;
  std::string json_out;
  std::string html_out;
  double max_seconds = 3.0;
  double timeout_s = 60;
  double timed_checks = -1;  ///< < 0: the policy's default
};

std::string BuildLine(const EvalRecord& r) {
  if (!r.build) return "loaded by the worker (hybrid)";
  const BuildResult& b = *r.build;
  // "cached" only for a build an earlier process compiled; one this process
  // compiled (in its prebuild, while the worker started) is "compiled".
  std::string s = !b.ok ? fmt::format("failed to compile in {:.2f} s", b.compile_s)
                  : b.cache_hit
                      ? fmt::format("cached (compiled in {:.2f} s by an earlier run)", b.compile_s)
                      : fmt::format("compiled in {:.2f} s", b.compile_s);
  for (const auto& k : b.resources)
    s += fmt::format("; {}: {} registers, {} B smem, {} B spilled", k.demangled.empty() ? k.kernel : k.demangled,
                     k.registers, k.smem_bytes, k.spill_store_bytes + k.spill_load_bytes);
  return s;
}

void PrintRecord(const EvalRecord& r, const TaskBundle& bundle, const Contract& contract) {
  fmt::print("task       {}\n", r.task_name);
  fmt::print("contract   {}\n", DescribeContract(contract));
  fmt::print("candidate  {} ({})\n", r.candidate_name, r.candidate_kind);
  fmt::print("build      {}\n", BuildLine(r));
  fmt::print("inputs     checked on {}\n", DescribeDistributions(r.trust.distributions));
  fmt::print("isolation  {}; {}\n",
             r.trust.sandbox.is_object() ? "the candidate ran sandboxed" : "the candidate ran without the sandbox",
             r.trust.clean_reference ? "the reference and baselines were checked in a clean process"
                                     : "no clean process checked the reference");
  for (const auto& note : bundle.flag_notes) fmt::print("task flag  {}\n", note);
  fmt::print("verdict    {}\n", OutcomeLine(r.outcome));
  if (const auto* inc = std::get_if<Incorrect>(&r.outcome))
    for (size_t i = 1; i < inc->reasons.size(); ++i) fmt::print("           {}\n", inc->reasons[i]);
  if (const auto* b = std::get_if<BuildFailed>(&r.outcome)) fmt::print("\n{}\n", b->log);
  if (const auto* c = std::get_if<Crashed>(&r.outcome)) fmt::print("\n{}\n", c->message);
  if (const auto* m = std::get_if<Measured>(&r.outcome)) {
    Table t({"", "median ms", "95% interval", "samples", "energy mJ/call"});
    auto energy = [](const std::optional<double>& e) { return e ? fmt::format("{:.4g}", *e) : std::string("-"); };
    t.AddRow({"candidate", FormatMs(m->time_ms.median),
              fmt::format("{} .. {}", FormatMs(m->time_ms.ci_low), FormatMs(m->time_ms.ci_high)),
              std::to_string(m->time_ms.n), energy(m->energy_mj_per_call)});
    if (m->eager_ms)
      t.AddRow({"eager", FormatMs(m->eager_ms->median),
                fmt::format("{} .. {}", FormatMs(m->eager_ms->ci_low), FormatMs(m->eager_ms->ci_high)),
                std::to_string(m->eager_ms->n), energy(m->eager_energy_mj_per_call)});
    if (m->clean_eager_ms)
      t.AddRow({"eager, clean process", FormatMs(m->clean_eager_ms->median),
                fmt::format("{} .. {}", FormatMs(m->clean_eager_ms->ci_low), FormatMs(m->clean_eager_ms->ci_high)),
                std::to_string(m->clean_eager_ms->n), "-"});
    if (m->compile_ms)
      t.AddRow({"torch.compile", FormatMs(m->compile_ms->median),
                fmt::format("{} .. {}", FormatMs(m->compile_ms->ci_low), FormatMs(m->compile_ms->ci_high)),
                std::to_string(m->compile_ms->n), "-"});
    if (m->clean_compile_ms)
      t.AddRow({"torch.compile, clean", FormatMs(m->clean_compile_ms->median),
                fmt::format("{} .. {}", FormatMs(m->clean_compile_ms->ci_low), FormatMs(m->clean_compile_ms->ci_high)),
                std::to_string(m->clean_compile_ms->n), "-"});
    t.AddRow({"floor", FormatMs(bundle.floor_ms), bundle.floor_bound + "-bound (reference algorithm)", "-", "-"});
    t.AddRow({"hard floor", FormatMs(bundle.hard_floor_ms), "inputs read, outputs written", "-", "-"});
    fmt::print("\n{}", t.Render());
    if (auto sp = m->SpeedupVsEager()) fmt::print("\nspeedup vs eager {:.2f}x", *sp);
    if (auto sp = m->SpeedupVsCompile()) fmt::print(", vs torch.compile {:.2f}x", *sp);
    if (bundle.floor_ms > 0 && m->time_ms.median > 0)
      fmt::print(", {:.0f}% of the floor", 100 * bundle.floor_ms / m->time_ms.median);
    fmt::print("\n");
    fmt::print("host clock {} ms median (device-wide synchronize)\n", FormatMs(m->host_ms.median));
    if (m->clean_eager_ms) fmt::print("           (speedups use the faster of the two eager medians)\n");
    for (const auto& n : m->notes) fmt::print("checked    {}\n", n);
    for (const auto& w : m->warnings) fmt::print("warning    {}\n", w);
  }
  fmt::print("source to verdict {:.2f} s (build {:.2f} s, verification {:.2f} s); timing {:.2f} s\n",
             r.source_to_verdict_s, r.build_s, r.verify_s, r.time_s);
}

int RunEval(const EvalArgs& a) {
  Task task = LoadTask(a.task, PythonFor(a.common));
  Contract contract = ResolveContract(task, a.contract);
  for (const auto& path : a.candidates) LoadCandidate(path);  // a bad path is one sentence, before any worker starts
  if (WantsGpuButNoneVisible(a.common))
    throw Error("no CUDA GPU is visible on this machine: run kopt eval where a GPU is, or pass --device cpu to "
                "verify a hybrid candidate on the CPU.");
  Context ctx = MakeContext(a.common);
  // The loop over the given files: the replay proposer, each a child of the
  // root measured once (a sweep), nothing kept beyond this command.
  LoopOptions o;
  o.proposer = "replay";
  for (const auto& path : a.candidates) o.proposer_options.replay_paths.push_back(path);
  o.search = "sweep";
  o.finalists = 0;
  o.baselines = false;
  o.compile_baseline = false;
  o.arch = ctx.arch;
  o.scratch = ctx.cache_dir / "loop";
  if (a.tolerance == "kernelbench") o.eval.policy.tolerance = TolerancePolicy::kKernelBench;
  o.eval.seeds = a.seeds;
  o.eval.time_compile = a.compile;
  o.eval.timing["max_seconds"] = a.max_seconds;
  o.eval.verify_timeout_s = a.timeout_s;
  if (a.timed_checks >= 0) o.eval.policy.timed_check_p = a.timed_checks;
  ctx.evaluator->Prewarm();
  auto store = MakeMemoryRunStore();
  Tuner tuner(ctx.evaluator.get(), store.get(), o);
  Json records = Json::array();
  int failed = 0;
  tuner.on_measurement.push_back([&](const NodeEvent& e) {
    if (!e.record) return;
    if (!records.empty()) fmt::print("\n");
    PrintRecord(*e.record, *e.bundle, contract);
    failed += !std::holds_alternative<Measured>(e.record->outcome);
    records.push_back(ToJson(*e.record));
    // After every candidate: nothing finished is lost.
    Json j{{"bundle", ToJson(*e.bundle)}, {"records", records}};
    if (!a.json_out.empty()) WriteJsonFileAtomic(a.json_out, j);
    if (!a.html_out.empty()) WriteHtmlReport(a.html_out, j);
  });
  tuner.on_log = [](const std::string& line) { PrintProgress(line); };
  LoopResult r = tuner.Run({LoopTask{task, contract, std::nullopt}});
  if (!r.tasks.empty() && r.tasks[0].status == TaskStatus::kFailed) throw Error(r.tasks[0].error);
  if (!a.json_out.empty()) fmt::print("wrote {}\n", a.json_out);
  if (!a.html_out.empty()) fmt::print("wrote {}\n", a.html_out);
  int skipped = static_cast<int>(a.candidates.size()) - static_cast<int>(records.size());
  return failed || skipped > 0 ? 1 : 0;
}

}  // namespace

void AddEvalCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<EvalArgs>();
  CLI::App* cmd = app->add_subcommand("eval", "Verify candidates against a task and time them against eager PyTorch");
  cmd->add_option("task", args->task, "KernelBench-format task file (.py)")->required();
  cmd->add_option("candidates", args->candidates,
                  "Candidates, evaluated in order in one worker session: a .cu implementing include/kopt/abi.h, or "
                  "a ModelNew .py")
      ->required();
  cmd->add_option("--tolerance", args->tolerance,
                  "calibrated: within a multiple of the reference's own error against float64 (default); "
                  "kernelbench: allclose to the fp32 reference (1e-4; 1e-2 for 16-bit)")
      ->check(CLI::IsMember({"calibrated", "kernelbench"}));
  cmd->add_option("--seeds", args->seeds, "Input seeds for verification")->delimiter(',')->capture_default_str();
  cmd->add_flag("--compile", args->compile, "Also time torch.compile, interleaved");
  cmd->add_option("--max-seconds", args->max_seconds, "Timing budget per contender")
      ->capture_default_str()
      ->check(PositiveNumber());
  cmd->add_option("--timeout", args->timeout_s,
                  "Seconds verification may take before the candidate counts as hung")
      ->capture_default_str()
      ->check(PositiveNumber());
  cmd->add_option("--timed-checks", args->timed_checks,
                  "Chance that each timed call is checked after the fact (default 0.05; 1 checks every one)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--json", args->json_out, "Write the full records (every sample) to this file");
  cmd->add_option("--html", args->html_out, "Write an HTML report with charts to this file");
  AddContractOptions(cmd, &args->contract);
  AddCommonOptions(cmd, &args->common);
  cmd->callback([args, exit_code] { *exit_code = RunEval(*args); });
}

}  // namespace kopt
