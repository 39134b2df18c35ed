// `kopt profile TASK CANDIDATE`: verify, then profile in tiers, classify on
// the roofline and print the analysis tools' diagnoses, most valuable first.
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.h"
#include "cli/context.h"
#include "core/error.h"
#include "core/hash.h"
#include "diagnose/profile_session.h"
#include "loop/tuner.h"
#include "report/html_report.h"
#include "report/table.h"
#include "store/file_cache.h"
#include "store/run_store.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct ProfileArgs {
  CommonOptions common;
  std::string task;
  std::string candidate;
  std::string json_out;
  std::string html_out;
  std::string save_dir;
  std::string replay_dir;
  int tier = 2;
  bool one_pass = false;
  bool source = false;
  int calls = 1;
  int max_launches = 10;
  std::string timeline = "auto";
  double max_seconds = 0.5;
};

std::string Evidence(const Diagnosis& d) {
  std::string s;
  for (const auto& [k, v] : d.evidence) {
    if (!s.empty()) s += ", ";
    s += fmt::format("{}={:.4g}", k, v);
  }
  return s;
}

void Print(const ProfileData& d, const DiagnosisReport& r) {
  fmt::print("task       {}\n", d.task_name);
  fmt::print("candidate  {} ({})\n", d.candidate_name, d.candidate_kind);
  if (d.context.time_ms > 0)
    fmt::print("measured   {} ms per call (CUDA events){}\n", FormatMs(d.context.time_ms),
               d.context.host_ms > 0 ? ", host clock " + FormatMs(d.context.host_ms) + " ms"
                                     : std::string());
  fmt::print("class      {} — {}\n", BoundClassName(r.call.bound), r.call.explanation);
  if (r.call.floor_ms > 0)
    fmt::print("floor      {} ms ({}-bound); the call takes {:.2f}x the floor\n",
               FormatMs(r.call.floor_ms), r.call.floor_bound, r.call.headroom);

  Table t({"kernel", "launches", "ms/launch", "class", "explanation"});
  for (const auto& k : r.kernels) {
    std::string name = k.kernel.substr(0, k.kernel.find('('));
    if (name.size() > 48) name = name.substr(0, 45) + "...";
    t.AddRow({name, std::to_string(k.launches), FormatMs(k.mean_ms),
              BoundClassName(k.roofline.bound), k.roofline.explanation});
  }
  fmt::print("\n{}", t.Render());

  struct Item {
    std::string where;
    const Diagnosis* d;
  };
  // Ranked by what each could save of the whole call.
  std::vector<Diagnosis> ranked = RankedDiagnoses(r);
  std::vector<Item> items;
  for (const auto& d2 : ranked)
    items.push_back(
        {d2.kernel == "(call)" ? "whole call" : d2.kernel.substr(0, d2.kernel.find('(')), &d2});
  fmt::print("\ndiagnoses, most valuable first (by the share of the whole call each could save)\n");
  if (items.empty()) fmt::print("  none: no tool found a flaw worth reporting\n");
  for (const auto& it : items) {
    if (it.d->kernel == "(call)")
      fmt::print("  [{}] {} on the whole call — estimated gain {:.0f}% of the call\n",
                 it.d->severity, it.d->tool, 100 * it.d->CallGain());
    else
      fmt::print("  [{}] {} on {} — estimated gain {:.0f}% of the call ({:.0f}% of this kernel)\n",
                 it.d->severity, it.d->tool, it.where, 100 * it.d->CallGain(),
                 100 * it.d->estimated_gain);
    fmt::print("      {}\n", it.d->advice);
    fmt::print("      evidence: {}\n", Evidence(*it.d));
    if (!it.d->suggested_moves.empty()) {
      std::string moves;
      for (const auto& m : it.d->suggested_moves) moves += (moves.empty() ? "" : ", ") + m;
      fmt::print("      moves: {}\n", moves);
    }
  }
  if (!d.ncu_source.empty()) {
    SourceHotspots h = ParseSourcePage(d.ncu_source, 5);
    if (!h.error.empty()) {
      fmt::print("\nsource counters: {}\n", h.error);
    } else {
      fmt::print("\nhottest instructions ({} stall samples in all)\n", h.total_samples);
      for (const auto& l : h.top) {
        std::string why;
        if (!l.top_reason.empty() && l.stall_samples > 0)
          why = fmt::format(
              "  [{} {:.0f}%{}]", l.top_reason, 100 * l.top_reason_samples / l.stall_samples,
              l.executed == 0 && l.top_reason == "drain" ? ": warps done, waiting for their stores"
                                                         : "");
        fmt::print("  {:>5.1f}%  {:<16} {}{}\n",
                   h.total_samples > 0 ? 100 * l.stall_samples / h.total_samples : 0.0, l.address,
                   l.source, why);
      }
    }
  }
  for (const auto& n : r.notes) fmt::print("note       {}\n", n);
  std::string tiers;
  for (const auto& [tier, s] : d.tier_seconds)
    tiers += fmt::format("{}{} {:.1f} s", tiers.empty() ? "" : ", ", tier, s);
  if (!tiers.empty()) fmt::print("tier cost  {}\n", tiers);
}

// Where a profile is kept with its candidate: a folder of the cache's
// "profiles" (store/file_cache.h).
struct StoredProfile {
  fs::path cache_dir;
  std::string key;  ///< ProfileCacheKey
};

/// Runs the tiers on the GPU: verification first (a wrong kernel is not
/// worth profiling), then static, ncu tier 1, ncu tier 2 and the timeline.
ProfileData Collect(const ProfileArgs& a, const fs::path& data_dir,
                    std::optional<StoredProfile>* stored) {
  Task task = LoadTask(a.task, PythonFor(a.common));
  Candidate cand = LoadCandidate(a.candidate);
  if (WantsGpuButNoneVisible(a.common))
    throw Error(
        "no CUDA GPU is visible on this machine: run kopt profile where a GPU is, or pass --replay "
        "DIR to "
        "diagnose a saved profile.");
  Context ctx = MakeContext(a.common);
  ctx.evaluator->Prewarm();
  // Verification and timing are the loop's: the candidate is its one replayed
  // proposal (a wrong kernel is not worth profiling).
  LoopOptions o;
  o.proposer = "replay";
  o.proposer_options.replay_paths = {cand.path};
  o.search = "sweep";
  o.finalists = 0;
  o.baselines = false;
  o.compile_baseline = false;
  o.arch = ctx.arch;
  o.scratch = ctx.cache_dir / "loop";
  o.eval.timing["max_seconds"] = a.max_seconds;
  auto store = MakeMemoryRunStore();
  Tuner tuner(ctx.evaluator.get(), store.get(), o);
  std::optional<EvalRecord> measured;
  std::optional<TaskBundle> seen;
  tuner.on_measurement.push_back([&](const NodeEvent& e) {
    if (!e.record) return;
    measured = *e.record;
    seen = *e.bundle;
  });
  PrintProgress("verifying and timing " + cand.name);
  Contract contract =
      ResolveContract(task, ContractOverrides{});  // the task's own contract file, if any
  LoopResult lr = tuner.Run({LoopTask{task, contract, std::nullopt}});
  if (!measured) {
    if (!lr.tasks.empty() && !lr.tasks[0].error.empty()) throw Error(lr.tasks[0].error);
    throw Error(cand.name + " was not evaluated: check it with kopt eval first.");
  }
  EvalRecord rec = *measured;
  TaskBundle bundle = *seen;
  const auto* m = std::get_if<Measured>(&rec.outcome);
  if (!m)
    throw Error(fmt::format(
        "{} is not profiled because it did not pass verification ({}); fix it with kopt eval "
        "first.",
        cand.name, OutcomeLine(rec.outcome)));

  ProfileData d = MakeProfileData(task, bundle, cand, rec, ctx.evaluator->Device(),
                                  ctx.evaluator->DeviceCeilings(), a.calls);
  ctx.evaluator.reset();
  ctx.worker.reset();  // the GPU is ncu's now
  ctx.clean_worker.reset();

  std::vector<BuildResult> objects;
  ProfileTarget target = ProfileTargetOf(task, cand, rec, &objects);
  target.device = a.common.device;
  target.python = PythonFor(a.common);
  target.repo_root = ctx.repo_root;
  target.cache_dir = ctx.cache_dir;
  target.arch = ctx.arch;
  target.calls = a.calls;
  TierOptions to;
  to.tier = a.tier;
  to.one_pass = a.one_pass;
  to.timeline = a.timeline;
  to.hybrid = cand.kind == CandidateKind::kHybrid;
  to.source = a.source;
  to.max_launches = a.max_launches;
  to.progress = PrintProgress;
  auto profiler = MakeProcessProfiler();
  RunProfileTiers(*profiler, target, objects, to, data_dir, &d);
  *stored = StoredProfile{ctx.cache_dir, ProfileCacheKey(task.name, ContentHash({cand.source}))};
  return d;
}

int RunProfile(const ProfileArgs& a) {
  fs::path data_dir = DiagnoseDataDir();
  ProfileData d;
  std::optional<StoredProfile> stored;
  if (!a.replay_dir.empty()) {
    d = LoadProfile(a.replay_dir);
  } else {
    if (a.task.empty() || a.candidate.empty())
      throw Error(
          "kopt profile needs a task and a candidate (or --replay DIR): see kopt profile --help.");
    d = Collect(a, data_dir, &stored);
  }
  DiagnosisReport r = DiagnoseProfileData(d, data_dir);
  Print(d, r);
  Json j = ToJson(d, r);
  if (stored) {  // diagnoses are kept with the candidate
    FileCache cache(stored->cache_dir);
    fs::path dir = cache.FolderOf(CacheCollection::kProfiles, stored->key);
    SaveProfile(d, dir);
    cache.Put(CacheCollection::kProfiles, ProfileDiagnosisKey(stored->key), j);
    WriteHtmlReport(dir / "report.html", j);
    fmt::print("stored     {}\n", dir.string());
  }
  if (!a.save_dir.empty()) SaveProfile(d, a.save_dir);
  if (!a.json_out.empty()) {
    WriteJsonFileAtomic(a.json_out, j);
    fmt::print("wrote {}\n", a.json_out);
  }
  if (!a.html_out.empty()) {
    WriteHtmlReport(a.html_out, j);
    fmt::print("wrote {}\n", a.html_out);
  }
  return 0;
}

}  // namespace

void AddProfileCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app->add_subcommand("profile",
                                      "Profile a verified candidate (ncu, SASS, timeline), "
                                      "classify it on the roofline and diagnose it");
  cmd->add_option("task", args->task, "KernelBench-format task file (.py)");
  cmd->add_option("candidate", args->candidate,
                  "A .cu implementing include/kopt/abi.h, or a ModelNew .py");
  cmd->add_option(
         "--tier", args->tier,
         "1: a small ncu metric set; 2: plus the sections the bottleneck class needs (default)")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  cmd->add_flag(
      "--one-pass", args->one_pass,
      "Collect tier 1 and every class's tier-2 metrics in one ncu run (for recording fixtures)");
  cmd->add_flag("--source", args->source,
                "Also collect source-level counters (SASS lines with their stall samples) of the "
                "kernel taking the "
                "most time");
  cmd->add_option("--calls", args->calls, "Forward calls profiled by ncu, after 3 warm-up calls")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--max-launches", args->max_launches,
                  "Kernel launches per call ncu profiles (each costs it a second or two); the "
                  "timeline counts the "
                  "rest. 0: all")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--timeline", args->timeline,
                  "Kernel timeline through the PyTorch profiler: auto (hybrids and multi-kernel "
                  "calls), on, off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option("--max-seconds", args->max_seconds, "Timing budget of the verification run")
      ->capture_default_str()
      ->check(PositiveNumber());
  cmd->add_option("--json", args->json_out, "Write the classification and diagnoses to this file");
  cmd->add_option("--html", args->html_out,
                  "Write an HTML report (roofline, utilization, diagnoses) to this file");
  cmd->add_option("--save", args->save_dir,
                  "Also keep the raw ncu CSV, SASS and context in this folder");
  cmd->add_option(
      "--replay", args->replay_dir,
      "Diagnose a folder written by --save again, without a GPU (thresholds from data/diagnose)");
  AddCommonOptions(cmd, &args->common);
  cmd->callback([args, exit_code] { *exit_code = RunProfile(*args); });
}

}  // namespace kopt
