#include "cli/context.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "build/abi_exports.h"
#include "core/error.h"
#include "core/gpu.h"
#include "core/paths.h"
#include "core/subprocess.h"

namespace kopt {
namespace fs = std::filesystem;
namespace {

// Why `python` (a path, or a name looked up on PATH) cannot be run; "" when
// it can.
std::string PythonProblem(const std::string& python) {
  if (python.find('/') == std::string::npos)
    return FindOnPath(python).empty() ? "there is no " + python + " on PATH" : "";
  std::error_code ec;
  if (!fs::exists(python, ec)) return "the interpreter " + python + " does not exist";
  if (fs::is_directory(python, ec)) return python + " is a directory, not an interpreter";
  if (::access(python.c_str(), X_OK) != 0) return python + " is not executable";
  return "";
}

}  // namespace

CLI::Validator PositiveNumber() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        size_t used = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || !std::isfinite(v) || v <= 0)
          return "give a finite number above zero, not " + text;
        return "";
      },
      "NUMBER>0");
}

CLI::Validator ValidRegex() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          std::regex re(text);
        } catch (const std::regex_error& e) {
          std::string why = e.what();
          while (!why.empty() && (why.back() == '.' || why.back() == ' ')) why.pop_back();
          if (!why.empty()) why[0] = static_cast<char>(std::tolower(why[0]));
          return "'" + text + "' is not a valid regular expression (" + why + ")";
        }
        return "";
      },
      "REGEX");
}

std::string PythonFor(const CommonOptions& o) {
  if (!o.python.empty()) return o.python;
  if (const char* p = std::getenv("KOPT_PYTHON"); p && *p) return p;
  return "python3";
}

void AddCommonOptions(CLI::App* app, CommonOptions* o) {
  app->add_option("--device", o->device,
                  "Where the worker runs: cuda, cuda:N, or cpu (no timing of GPU code)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& d) -> std::string {
            static const std::regex kDevice("cpu|cuda(:[0-9]+)?");
            return std::regex_match(d, kDevice)
                       ? ""
                       : "give cpu, cuda or cuda:N (e.g. cuda:0), not " + d;
          },
          "cpu|cuda[:N]"));
  app->add_option("--cache", o->cache_dir,
                  "Cache folder for builds, ceilings and bundles (default: ~/.cache/kopt)");
  app->add_option(
      "--arch", o->arch,
      "nvcc target, e.g. sm_90 or sm_90a (default: the GPU's), or host: the C++ compiler, kernels "
      "emulated on the CPU (the default with --device cpu; verification only)");
  app->add_option("--python", o->python,
                  "Python with PyTorch for the worker (default: $KOPT_PYTHON, python3)")
      ->check(CLI::Validator(
          [](std::string& p) -> std::string {
            std::string problem = PythonProblem(p);
            if (problem.empty()) return "";
            return problem +
                   ": pass --python the path of a Python that has PyTorch, or leave --python out "
                   "to use $KOPT_PYTHON or python3";
          },
          "PATH"));
  app->add_flag("--refresh", o->refresh,
                "Measure ceilings and capture tasks again, ignoring the cache");
  app->add_flag(
      "!--no-sandbox", o->sandbox,
      "Run candidates outside the OS sandbox (by default they get no network and may write only "
      "<cache>/scratch/<pid>; see docs/verification.md)");
  app->add_flag("--sandbox", o->sandbox, "Run candidates in the OS sandbox (the default)");
  app->add_flag("-v,--verbose", o->verbose, "Print progress details");
}

void AddContractOptions(CLI::App* app, ContractOverrides* o) {
  app->add_option(
      "--contract", o->file,
      "Contract file to use instead of the task's <stem>.contract.json (docs/verification.md)");
  app->add_option(
         "--precision", o->precision,
         "Precision the candidate may use: strict (fp32, default), tf32 or bf16 matrix operands")
      ->check(CLI::IsMember({"strict", "tf32", "bf16"}));
  app->add_flag("--forbid-torch-ops", o->forbid_torch_ops,
                "The candidate may call no torch compute operator (nor the task's Model): "
                "allocation, views and "
                "copies only");
  app->add_flag("--allow-torch-ops", o->allow_torch_ops,
                "Allow torch operators even where the contract file forbids them");
  app->add_option("--distributions", o->distributions,
                  "Input distributions besides the task's own to check candidates on: auto (every "
                  "one where the "
                  "reference is finite; default), none, or a list such as signed,wide");
  app->add_option("--second-shape", o->second_shape,
                  "NAME=VALUE: also verify with this module-level integer of the task overridden "
                  "(repeatable; "
                  "e.g. batch_size=8193)")
      ->allow_extra_args(false)
      ->delimiter(',');
}

std::filesystem::path RunStorePath(const CommonOptions& o, const std::string& store_flag) {
  if (!store_flag.empty()) return store_flag;
  return DefaultRunStorePath(o.cache_dir);
}

namespace {
std::vector<std::string>& CommandLineStore() {
  static std::vector<std::string> argv;
  return argv;
}
}  // namespace

void SetCommandLine(int argc, char** argv) { CommandLineStore().assign(argv, argv + argc); }
const std::vector<std::string>& CommandLine() { return CommandLineStore(); }

bool WantsGpuButNoneVisible(const CommonOptions& o) {
  return o.device.rfind("cuda", 0) == 0 && !HaveCudaDevice();
}

void PrintProgress(const std::string& line) { fmt::print(stderr, "kopt: {}\n", line); }

Context MakeContext(const CommonOptions& o) {
  if (o.python.empty()) {
    if (const char* env = std::getenv("KOPT_PYTHON"); env && *env) {
      if (std::string problem = PythonProblem(env); !problem.empty())
        throw Error("KOPT_PYTHON is set to " + std::string(env) + ", but " + problem +
                    ": set KOPT_PYTHON to a Python that has PyTorch, unset it to use python3, or "
                    "pass --python.");
    }
  }
  Context c;
  c.repo_root = FindRepoRoot();
  c.cache_dir = o.cache_dir.empty() ? DefaultCacheDir() : std::filesystem::path(o.cache_dir);
  c.arch = o.arch;
  if (c.arch.empty()) {
    int cc = o.device.rfind("cuda", 0) == 0 ? CudaComputeCapability(0) : 0;
    // A CPU worker can run only host builds of cuda candidates (their kernels
    // emulated on the CPU: include/kopt/host_cuda.h), so that is its default.
    c.arch = o.device == "cpu" ? kHostArch : NativeArch(cc);
  }
  BuilderOptions bo;
  bo.cache_dir = BuildCacheDir(c.cache_dir);
  bo.include_dir = c.repo_root / "include";
  bo.arch = c.arch;
  // A build that does not export kopt_forward with C linkage is a failed
  // build, with the reason, not a crash when the worker loads it.
  c.builder = WithAbiExportCheck(MakeNvccBuilder(bo));
  // The same recipe into the worker's cache, where kopt.load_cuda looks.
  BuilderOptions worker_bo = bo;
  worker_bo.cache_dir = BuildCacheDir(WorkerCacheDir(c.cache_dir));
  c.worker_builder = MakeNvccBuilder(worker_bo);
  WorkerOptions wo;
  wo.repo_root = c.repo_root;
  wo.device = o.device;
  wo.python = o.python;
  wo.cache_dir = c.cache_dir;
  wo.arch = c.arch;
  if (o.sandbox) {
    wo.sandbox_dir = c.cache_dir / "scratch" / std::to_string(::getpid());
    wo.on_warning = [](const std::string& line) {
      fmt::print(stderr, "kopt: warning: {}\n", line);
    };
  }
  c.worker = MakeProcessWorker(wo);
  // The clean worker runs only the task's own code, never a candidate's.
  // KOPT_CLEAN_WORKER=0 does without it (to measure what it costs; verdicts
  // then say no clean process checked the reference).
  const char* clean_env = std::getenv("KOPT_CLEAN_WORKER");
  if (!(clean_env && std::string(clean_env) == "0")) {
    WorkerOptions clean = wo;
    clean.sandbox_dir.clear();
    clean.on_warning = nullptr;
    c.clean_worker = MakeProcessWorker(clean);
  }
  c.evaluator = std::make_unique<Evaluator>(
      c.builder.get(), c.worker.get(),
      EvaluatorConfig{c.cache_dir, o.refresh, c.worker_builder.get()}, c.clean_worker.get());
  c.evaluator->on_progress = PrintProgress;
  return c;
}

}  // namespace kopt
