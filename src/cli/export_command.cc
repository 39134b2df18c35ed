// `kopt export --task TASK.py --candidate FILE`: the files a user drops into
// their code (docs/export.md). Writes files only: nothing is built or run.
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/gpu.h"
#include "core/json.h"
#include "report/export.h"
#include "run/worker_channel.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

struct ExportArgs {
  std::string run;  ///< a run store (`kopt export RUN`), wired with the loop
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

int RunExport(const ExportArgs& a) {
  if (!a.run.empty() && std::filesystem::path(a.run).extension() == ".py")
    throw Error("kopt export takes the task as an option: kopt export --task " + a.run +
                " --candidate FILE.");
  if (!a.run.empty())
    throw Error(
        "kopt export RUN is not wired to the run store yet: export one candidate with --task "
        "TASK.py "
        "--candidate FILE.");
  if (a.task.empty() || a.candidate.empty())
    throw Error("kopt export needs --task TASK.py and --candidate FILE (a .cu or a ModelNew .py).");
  Task task = LoadTask(a.task);
  Candidate cand = LoadCandidate(a.candidate);

  ExportRequest r;
  r.task_path = task.path;
  r.candidate = cand;
  r.name = a.name;
  // As the other commands choose it: the GPU's own arch, else sm_90.
  r.arch = a.arch;
  if (r.arch.empty()) {
    int cc = CudaComputeCapability(0);
    r.arch = cc ? fmt::format("sm_{}", cc) : "sm_90";
  }
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
                  "A run made by kopt optimize (its best candidate per task; not wired yet)");
  cmd->add_option("--task", args->task,
                  "KernelBench-format task file (.py) the candidate implements");
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
