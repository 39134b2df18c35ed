// `kopt export --task TASK.py --candidate FILE`: the files a user drops into
// their code (docs/export.md). Writes files only: nothing is built or run.
#include <fmt/format.h>

#include <map>

#include "cli/commands.h"
#include "cli/context.h"
#include "core/error.h"
#include "core/gpu.h"
#include "core/json.h"
#include "report/export.h"
#include "run/worker_channel.h"
#include "store/run_store.h"
#include "store/store_rules.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

struct ExportArgs {
  std::string run;    ///< a run of the run store (`kopt export RUN`)
  std::string store;  ///< the run store file (default: RunStorePath)
  std::string cache;
  std::string task;
  std::string candidate;
  std::string out;
  std::string name;
  std::string arch;
  std::string provenance;
};

// --provenance takes a JSON file or JSON text.
Json ReadProvenance(const std::string& arg) {
  if (arg.empty()) return nullptr;
  Json j;
  if (std::filesystem::is_regular_file(arg)) {
    j = ReadJsonFile(arg);
  } else {
    try {
      j = Json::parse(arg);
    } catch (const Json::parse_error& e) {
      throw Error(
          fmt::format("--provenance is neither a file nor valid JSON ({}): give a JSON object or a "
                      "file holding one.",
                      e.what()));
    }
  }
  if (!j.is_object())
    throw Error(
        "--provenance must be a JSON object, such as {\"run\": \"r1\", \"speedup_vs_eager\": "
        "2.1}.");
  return j;
}

// An export targets a GPU: a run measured on the CPU (arch `host`, kernels
// emulated) exports for this machine's GPU, else sm_90, like an unset arch.
std::string DefaultArch(const std::string& arch) {
  if (!arch.empty() && arch != kHostArch) return arch;
  return NativeArch(CudaComputeCapability(0));
}

void PrintFiles(const ExportedFiles& files) {
  for (const auto& f : {files.cu, files.header, files.modelnew, files.readme})
    if (!f.empty()) fmt::print("wrote {}\n", f.string());
  if (files.embedded_loader)
    fmt::print("its `import kopt` now binds an embedded loader: kopt is not needed to run it\n");
}

// `kopt export RUN`: the best candidate of each task of a run, with where it
// came from (the run, its move path, its measured speedups) in the README.
int ExportRun(const ExportArgs& a) {
  CommonOptions common;
  common.cache_dir = a.cache;
  std::filesystem::path path = RunStorePath(common, a.store);
  if (!std::filesystem::exists(path))
    throw Error("there is no run store at " + path.string() +
                ": run kopt optimize first, or pass --store.");
  auto store = MakeSqliteRunStore(path);
  auto run = store->FindRun(a.run);
  if (!run) throw Error("there is no run " + a.run + " in " + path.string() + ": see kopt runs.");
  int exported = 0;
  std::string abi = ReadTextFile(FindRepoRoot() / "include" / "kopt" / "abi.h");
  for (const TaskRecord& t : store->ListTasks(run->id)) {
    if (!a.task.empty() && a.task != t.name) continue;
    if (!t.best_node) {
      fmt::print("{}: no verified candidate to export ({})\n", t.name, TaskStatusName(t.status));
      continue;
    }
    std::vector<NodeRecord> nodes = store->ListNodes(run->id, t.index);
    std::map<int, const NodeRecord*> by_id;
    for (const auto& n : nodes) by_id[n.id] = &n;
    const NodeRecord* best = by_id.count(*t.best_node) ? by_id[*t.best_node] : nullptr;
    if (!best || best->source.empty()) {
      fmt::print("{}: its best is the reference itself; nothing to export\n", t.name);
      continue;
    }
    Json moves = Json::array();
    for (const NodeRecord* n = best; n;
         n = n->parent && by_id.count(*n->parent) ? by_id[*n->parent] : nullptr)
      if (!n->move.empty()) moves.insert(moves.begin(), n->move);
    Json provenance{{"task", t.name},
                    {"run", run->id},
                    {"node", best->id},
                    {"moves", moves},
                    {"device", run->device.value("name", "")}};
    if (auto o = store->GetOutcome(run->id, t.index, best->id)) {
      if (o->time_ms) provenance["time_ms"] = *o->time_ms;
      if (o->speedup) provenance["speedup_vs_eager"] = *o->speedup;
      if (o->outcome.contains("speedup_vs_compile"))
        provenance["speedup_vs_compile"] = o->outcome["speedup_vs_compile"];
      else if (t.bundle.compile_ms && o->time_ms)
        provenance["speedup_vs_compile"] = t.bundle.compile_ms->median / *o->time_ms;
    }
    // The finalists' re-timing, measured together, is the winner's number.
    for (const auto& f : t.finalists)
      if (f.is_object() && f.value("winner", false) && f.value("node", -1) == best->id) {
        for (const char* k : {"time_ms", "speedup_vs_eager", "speedup_vs_compile"})
          if (f.contains(k) && f[k].is_number()) provenance[k] = f[k];
        provenance["timed"] = "re-timed among the finalists in one worker";
      }
    ExportRequest r;
    r.task_path = t.path;
    if (std::filesystem::exists(t.path)) r.task_source = ReadTextFile(t.path);
    r.candidate.kind =
        best->kind == NodeKind::kCuda ? CandidateKind::kCuda : CandidateKind::kHybrid;
    r.candidate.source = best->source;
    r.candidate.name = best->name;
    r.name = t.name + "_best";
    std::optional<double> x;
    if (provenance.contains("speedup_vs_eager")) x = provenance["speedup_vs_eager"].get<double>();
    if (store_rules::KeepsReference(x)) {
      // Never worse than the reference: the task's own Model goes out.
      if (r.task_source.empty())
        throw Error("task " + t.name + " keeps its reference, but its file " + t.path +
                    " is gone: restore it to export the reference.");
      std::string why =
          fmt::format("nothing kopt verified beat eager PyTorch (the best, {}, ran at {:.2f}x)",
                      best->name, *x);
      r.candidate.kind = CandidateKind::kHybrid;
      r.candidate.source = ReferenceModelNewSource(r.task_source, why);
      r.candidate.name = t.name + " (reference)";
      r.name = t.name + "_reference";
      provenance = Json{{"task", t.name},
                        {"run", run->id},
                        {"kept", why},
                        {"device", run->device.value("name", "")}};
      fmt::print("{}: {}; exporting the reference unchanged\n", t.name, why);
    }
    r.arch = DefaultArch(a.arch.empty() ? run->options.value("arch", "") : a.arch);
    BuilderOptions builder;
    builder.arch = r.arch;
    r.recipe = ExportRecipe(builder, r.candidate);
    r.abi_header = abi;
    r.provenance = provenance;
    for (const auto& s : t.bundle.inputs) r.inputs.push_back(s);
    for (const auto& s : t.bundle.outputs) r.outputs.push_back(s);
    r.out_dir = (a.out.empty() ? std::filesystem::path("kopt-export") / run->id
                               : std::filesystem::path(a.out)) /
                t.name;
    PrintFiles(ExportCandidate(r));
    ++exported;
  }
  if (exported == 0)
    throw Error("run " + run->id + " has no verified candidate to export" +
                (a.task.empty() ? "" : " for task " + a.task) + ": see kopt show " + run->id + ".");
  return 0;
}

int RunExport(const ExportArgs& a) {
  if (!a.run.empty() && std::filesystem::path(a.run).extension() == ".py")
    throw Error("kopt export takes the task as an option: kopt export --task " + a.run +
                " --candidate FILE.");
  if (!a.run.empty()) return ExportRun(a);
  if (a.task.empty() || a.candidate.empty())
    throw Error("kopt export needs --task TASK.py and --candidate FILE (a .cu or a ModelNew .py).");
  Task task = LoadTask(a.task);
  Candidate cand = LoadCandidate(a.candidate);

  ExportRequest r;
  r.task_path = task.path;
  r.candidate = cand;
  r.name = a.name;
  // As the other commands choose it: the GPU's own arch, else sm_90.
  r.arch = a.arch == kHostArch ? "" : a.arch;
  if (r.arch.empty()) r.arch = NativeArch(CudaComputeCapability(0));
  BuilderOptions builder;
  builder.arch = r.arch;
  r.recipe = ExportRecipe(builder, cand);
  r.abi_header = ReadTextFile(FindRepoRoot() / "include" / "kopt" / "abi.h");
  r.provenance = ReadProvenance(a.provenance);
  r.out_dir = a.out.empty() ? std::filesystem::path("kopt-export") / task.name
                            : std::filesystem::path(a.out);

  ExportedFiles files = ExportCandidate(r);
  for (const auto& f : {files.cu, files.header, files.modelnew, files.readme})
    if (!f.empty()) fmt::print("wrote {}\n", f.string());
  if (files.embedded_loader)
    fmt::print("its `import kopt` now binds an embedded loader: kopt is not needed to run it\n");
  if (r.provenance.is_null())
    fmt::print("not verified by this command: run `kopt eval {} {}` for a verdict\n", a.task,
               a.candidate);
  return 0;
}

}  // namespace

void AddExportCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app->add_subcommand("export",
                                      "Write a candidate as files to drop into your code: a .cu "
                                      "with its ABI header and a KernelBench "
                                      "ModelNew file that needs no kopt");
  cmd->add_option("run", args->run,
                  "A run made by kopt optimize: its best candidate of each task (see kopt runs)");
  cmd->add_option("--task", args->task,
                  "KernelBench-format task file (.py) the candidate implements; with RUN, only "
                  "this task's name");
  cmd->add_option("--store", args->store,
                  "The run store (default: $KOPT_RUNS, else <cache>/runs.db)");
  cmd->add_option("--cache", args->cache, "kopt's cache folder (default: ~/.cache/kopt)");
  cmd->add_option("--candidate", args->candidate,
                  "The candidate: a .cu implementing include/kopt/abi.h, or a ModelNew .py");
  cmd->add_option("--out", args->out, "Folder to write (default: kopt-export/<task>)");
  cmd->add_option("--name", args->name,
                  "Stem of the written files (default: the candidate's file name)");
  cmd->add_option("--arch", args->arch,
                  "SM architecture of the nvcc recipe (default: this GPU's, else sm_90)");
  cmd->add_option("--provenance", args->provenance,
                  "How the candidate was verified, for the README: a JSON object or a file holding "
                  "one (task, run, "
                  "speedups, ...)");
  cmd->callback([args, exit_code] { *exit_code = RunExport(*args); });
}

}  // namespace kopt
