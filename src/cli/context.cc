#include "cli/context.h"

#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/gpu.h"

namespace kopt {

void AddCommonOptions(CLI::App* app, CommonOptions* o) {
  app->add_option("--device", o->device, "Where the worker runs: cuda:N, or cpu (no timing of GPU code)")
      ->capture_default_str();
  app->add_option("--cache", o->cache_dir, "Cache folder for builds, ceilings and bundles (default: ~/.cache/kopt)");
  app->add_option("--arch", o->arch, "nvcc target, e.g. sm_90 or sm_90a (default: the GPU's)");
  app->add_option("--python", o->python, "Python with PyTorch for the worker (default: $KOPT_PYTHON, python3)");
  app->add_flag("--refresh", o->refresh, "Measure ceilings and capture tasks again, ignoring the cache");
  app->add_flag("!--no-sandbox", o->sandbox,
                "Run candidates outside the OS sandbox (by default they get no network and may write only "
                "<cache>/scratch/<pid>; see docs/verification.md)");
  app->add_flag("--sandbox", o->sandbox, "Run candidates in the OS sandbox (the default)");
  app->add_flag("-v,--verbose", o->verbose, "Print progress details");
}

void AddContractOptions(CLI::App* app, ContractOverrides* o) {
  app->add_option("--contract", o->file,
                  "Contract file to use instead of the task's <stem>.contract.json (docs/verification.md)");
  app->add_option("--precision", o->precision,
                  "Precision the candidate may use: strict (fp32, default), tf32 or bf16 matrix operands")
      ->check(CLI::IsMember({"strict", "tf32", "bf16"}));
  app->add_flag("--forbid-torch-ops", o->forbid_torch_ops,
                "The candidate may call no torch compute operator (nor the task's Model): allocation, views and "
                "copies only");
  app->add_flag("--allow-torch-ops", o->allow_torch_ops, "Allow torch operators even where the contract file forbids them");
  app->add_option("--distributions", o->distributions,
                  "Input distributions besides the task's own to check candidates on: auto (every one where the "
                  "reference is finite; default), none, or a list such as signed,wide");
  app->add_option("--second-shape", o->second_shape,
                  "NAME=VALUE: also verify with this module-level integer of the task overridden (repeatable; "
                  "e.g. batch_size=8193)")
      ->allow_extra_args(false)
      ->delimiter(',');
}

bool WantsGpuButNoneVisible(const CommonOptions& o) {
  return o.device.rfind("cuda", 0) == 0 && !HaveCudaDevice();
}

void PrintProgress(const std::string& line) { fmt::print(stderr, "kopt: {}\n", line); }

Context MakeContext(const CommonOptions& o) {
  Context c;
  c.repo_root = FindRepoRoot();
  c.cache_dir = o.cache_dir.empty() ? DefaultCacheDir() : std::filesystem::path(o.cache_dir);
  c.arch = o.arch;
  if (c.arch.empty()) {
    int cc = o.device.rfind("cuda", 0) == 0 ? CudaComputeCapability(0) : 0;
    c.arch = cc ? fmt::format("sm_{}", cc) : "sm_90";
  }
  BuilderOptions bo;
  bo.cache_dir = c.cache_dir / "builds";
  bo.include_dir = c.repo_root / "include";
  bo.arch = c.arch;
  c.builder = MakeNvccBuilder(bo);
  WorkerOptions wo;
  wo.repo_root = c.repo_root;
  wo.device = o.device;
  wo.python = o.python;
  wo.cache_dir = c.cache_dir;
  wo.arch = c.arch;
  if (o.sandbox) {
    wo.sandbox_dir = c.cache_dir / "scratch" / std::to_string(::getpid());
    wo.on_warning = [](const std::string& line) { fmt::print(stderr, "kopt: warning: {}\n", line); };
  }
  c.worker = MakeProcessWorker(wo);
  // The clean worker runs only the task's own code, never a candidate's.
  WorkerOptions clean = wo;
  clean.sandbox_dir.clear();
  clean.on_warning = nullptr;
  c.clean_worker = MakeProcessWorker(clean);
  c.evaluator = std::make_unique<Evaluator>(c.builder.get(), c.worker.get(), EvaluatorConfig{c.cache_dir, o.refresh},
                                            c.clean_worker.get());
  c.evaluator->on_progress = PrintProgress;
  return c;
}

}  // namespace kopt
