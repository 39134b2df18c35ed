// `kopt build FILE.cu`: compile one source with kopt's Builder (the nvcc
// recipe and cache candidates use) and print the shared object and what
// ptxas reported. kopt.load_cuda asks this command, so hybrid candidates'
// kernels are built exactly as cuda candidates are.
#include <cstdlib>

#include <fmt/format.h>

#include "build/builder.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/gpu.h"
#include "core/json.h"
#include "core/paths.h"
#include "run/evaluator.h"
#include "run/worker_channel.h"

namespace kopt {
namespace {

struct BuildArgs {
  std::string source;
  std::string cache_dir;  ///< empty: DefaultCacheDir()
  std::string arch;       ///< empty: $KOPT_ARCH, else the GPU's, else sm_90
  std::string name;
  std::vector<std::string> flags;
  bool json = false;
};

std::string ArchFor(const BuildArgs& a) {
  if (!a.arch.empty()) return a.arch;
  if (const char* env = std::getenv("KOPT_ARCH"); env && *env) return env;
  return NativeArch(CudaComputeCapability(0));
}

void PrintResources(const BuildResult& r) {
  for (const auto& k : r.resources)
    fmt::print("{}: {} registers, {} bytes shared, {} bytes stack, {} bytes spilled ({})\n",
               k.demangled, k.registers, k.smem_bytes, k.stack_bytes,
               k.spill_store_bytes + k.spill_load_bytes, k.arch);
}

int RunBuild(const BuildArgs& a) {
  std::filesystem::path source(a.source);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(source, ec))
    throw Error(a.source + " is not a file: pass the .cu source to build.");
  std::filesystem::path cache =
      a.cache_dir.empty() ? DefaultCacheDir() : std::filesystem::path(a.cache_dir);
  BuilderOptions bo;
  bo.cache_dir = BuildCacheDir(cache);
  bo.include_dir = FindRepoRoot() / "include";
  bo.arch = ArchFor(a);
  bo.jobs = 1;
  std::unique_ptr<Builder> builder = MakeNvccBuilder(bo);
  BuildResult r = builder->Build(BuildRequest{
      ReadTextFile(source), a.name.empty() ? source.filename().string() : a.name, a.flags});
  if (a.json) {
    fmt::print("{}\n", ToJson(r).dump());
  } else if (r.ok) {
    fmt::print("{}\n", r.so_path.string());
    PrintResources(r);
  } else {
    fmt::print(stderr, "{}", r.log);
  }
  return r.ok ? 0 : 1;
}

}  // namespace

void AddBuildCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<BuildArgs>();
  CLI::App* cmd = app->add_subcommand("build",
                                      "Compile a .cu file with kopt's nvcc recipe and build cache; "
                                      "print the .so path and the ptxas resources");
  cmd->add_option("source", args->source, "The CUDA source (implementing include/kopt/abi.h)")
      ->required();
  cmd->add_option("--cache", args->cache_dir,
                  "Cache folder; the build lands in <cache>/builds (default: ~/.cache/kopt)");
  cmd->add_option("--arch", args->arch,
                  "nvcc target, e.g. sm_90 or sm_90a (default: $KOPT_ARCH, else the GPU's)");
  cmd->add_option("--name", args->name,
                  "A name for logs and build.json (default: the file name; not hashed)");
  cmd->add_option(
         "--nvcc-flag", args->flags,
         "An extra nvcc flag (repeatable, hashed with the source), e.g. --nvcc-flag=-DBLOCK=256")
      ->allow_extra_args(false);
  cmd->add_flag("--json", args->json,
                "Print the build result as one JSON line (ok, so_path, log, cache_hit, resources, "
                "...), also on "
                "failure");
  cmd->callback([args, exit_code] { *exit_code = RunBuild(*args); });
}

}  // namespace kopt
