// `kopt capture TASK`: run the reference and show what kopt learned about it.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/context.h"
#include "core/error.h"
#include "report/table.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

struct CaptureArgs {
  CommonOptions common;
  std::string task;
  bool compile = true;
  std::string json_out;
};

std::string ShapeText(const std::vector<long long>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void PrintBundle(const TaskBundle& b) {
  fmt::print("task     {} ({})\n", b.task_name, b.task_path);
  fmt::print("device   {} (cc {}.{}, {} SMs), torch {}\n", b.device.name, b.device.cc_major, b.device.cc_minor,
             b.device.sm_count, b.device.torch_version);
  Table sig({"tensor", "role", "dtype", "shape"});
  for (const auto& t : b.inputs) sig.AddRow({t.name, t.role, t.dtype, ShapeText(t.shape)});
  for (const auto& t : b.outputs) sig.AddRow({t.name, "output", t.dtype, ShapeText(t.shape)});
  fmt::print("\n{}", sig.Render());
  fmt::print("\nwork     {:.4g} GFLOP ({:.4g} in matrix ops), at least {:.4g} MB moved\n", b.flops / 1e9,
             b.matrix_flops / 1e9, b.min_bytes / 1e6);
  if (!b.uncounted_ops) {
    fmt::print(
        "uncounted unknown: captured before kopt listed the operators it has no FLOP rule "
        "for (--refresh captures again)\n");
  } else if (!b.uncounted_ops->empty()) {
    std::string ops;
    for (const auto& op : *b.uncounted_ops) ops += (ops.empty() ? "" : ", ") + op;
    fmt::print(
        "uncounted {}: run by the reference, but kopt has no FLOP rule for them, so they "
        "count as 0 FLOPs and the floor may be low\n",
        ops);
  }
  if (b.floor_ms <= 0)
    fmt::print("floor    none: {} has no measured ceilings (a floor needs a GPU)\n", b.device.name);
  else
    fmt::print(
        "floor    {} ms for the reference's algorithm ({}-bound at the measured ceilings); "
        "{} ms just to read the inputs and write the outputs\n",
        FormatMs(b.floor_ms), b.floor_bound, FormatMs(b.hard_floor_ms));
  if (b.training) fmt::print("mode     training (module.training is True, as KernelBench runs it)\n");
  if (b.eager_ms) fmt::print("eager    {} ms median (n={})\n", FormatMs(b.eager_ms->median), b.eager_ms->n);
  if (b.compile_ms) fmt::print("compile  {} ms median (n={})\n", FormatMs(b.compile_ms->median), b.compile_ms->n);
  if (!b.compile_error.empty()) fmt::print("compile  not timed: {}\n", b.compile_error);
  if (!b.kernels.empty()) {
    Table k({"reference kernel", "calls", "device ms"});
    for (const auto& kern : b.kernels) {
      std::string name = kern.name.size() > 70 ? kern.name.substr(0, 67) + "..." : kern.name;
      k.AddRow({name, fmt::format("{:g}", kern.calls), FormatMs(kern.device_ms)});
    }
    fmt::print("\n{}", k.Render());
  }
  if (b.flags.empty()) fmt::print("\nflags    none: the reference is a usable test\n");
  for (const auto& n : b.flag_notes) fmt::print("\nflag     {}", n);
  if (!b.flags.empty()) fmt::print("\n");
}

int RunCapture(const CaptureArgs& a) {
  Task task = LoadTask(a.task, PythonFor(a.common));
  if (WantsGpuButNoneVisible(a.common))
    throw Error("no CUDA GPU is visible on this machine: run kopt capture where a GPU is, or pass --device cpu.");
  Context ctx = MakeContext(a.common);
  TaskBundle b = ctx.evaluator->Bundle(task, /*baselines=*/true, a.compile);
  PrintBundle(b);
  if (!a.json_out.empty()) {
    WriteJsonFileAtomic(a.json_out, ToJson(b));
    fmt::print("wrote {}\n", a.json_out);
  }
  return 0;
}

}  // namespace

void AddCaptureCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<CaptureArgs>();
  CLI::App* cmd = app->add_subcommand(
      "capture", "Run a task's reference: signature, op graph, FLOPs and bytes, floor, kernels, baselines, flags");
  cmd->add_option("task", args->task, "KernelBench-format task file (.py)")->required();
  cmd->add_flag("!--no-compile", args->compile, "Skip the torch.compile baseline");
  cmd->add_option("--json", args->json_out, "Write the bundle to this file");
  AddCommonOptions(cmd, &args->common);
  cmd->callback([args, exit_code] { *exit_code = RunCapture(*args); });
}

}  // namespace kopt
