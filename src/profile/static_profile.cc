#include "profile/static_profile.h"

#include <unistd.h>

#include <cstdlib>

#include "core/subprocess.h"

namespace kopt {

std::string FindCuobjdump() {
  if (const char* env = std::getenv("KOPT_CUOBJDUMP"); env && *env && ::access(env, X_OK) == 0) {
    return env;
  }
  if (std::string on_path = FindOnPath("cuobjdump"); !on_path.empty()) return on_path;
  if (::access("/usr/local/cuda/bin/cuobjdump", X_OK) == 0) return "/usr/local/cuda/bin/cuobjdump";
  return "";
}

StaticReport MergeStatic(const std::vector<KernelResources>& resources,
                         const std::vector<SassFunction>& sass) {
  StaticReport report;
  std::vector<bool> used(sass.size(), false);
  for (const auto& r : resources) {
    StaticKernel k;
    k.kernel = r.kernel;
    k.demangled = r.demangled;
    k.arch = r.arch;
    k.resources = r;
    for (size_t i = 0; i < sass.size(); ++i) {
      if (!used[i] && sass[i].name == r.kernel && (r.arch.empty() || sass[i].arch == r.arch)) {
        k.sass = sass[i];
        used[i] = true;
        break;
      }
    }
    report.kernels.push_back(std::move(k));
  }
  for (size_t i = 0; i < sass.size(); ++i) {
    if (used[i]) continue;
    StaticKernel k;
    k.kernel = sass[i].name;
    k.demangled = sass[i].demangled;
    k.arch = sass[i].arch;
    k.sass = sass[i];
    report.kernels.push_back(std::move(k));
  }
  report.sass_available = !sass.empty();
  return report;
}

StaticReport StaticProfile(const BuildResult& build, const StaticProfileOptions& options) {
  std::vector<SassFunction> sass;
  std::string sass_text;
  std::vector<std::string> notes;
  std::string tool = options.cuobjdump.empty() ? FindCuobjdump() : options.cuobjdump;
  if (!build.ok || build.so_path.empty()) {
    notes.push_back("the build failed, so there is no shared object to disassemble");
  } else if (tool.empty()) {
    notes.push_back(
        "cuobjdump was not found (set KOPT_CUOBJDUMP, or put the CUDA toolkit's bin on PATH; "
        "`pip install triton` ships one), so the instruction mix is missing");
  } else {
    ProcessOptions po;
    po.timeout_s = options.timeout_s;
    ProcessResult r = RunProcess({tool, "--dump-sass", build.so_path.string()}, po);
    if (!r.ok()) {
      std::string why = r.spawn_failed ? "could not be started"
                        : r.timed_out  ? "timed out"
                                       : "exited with code " + std::to_string(r.exit_code);
      notes.push_back(tool + " " + why + " on " + build.so_path.string() + ": " +
                      r.err.substr(0, 500));
    } else {
      sass = ParseSass(r.out);
      sass_text = r.out;
      if (sass.empty()) notes.push_back(tool + " printed no SASS for " + build.so_path.string());
    }
  }
  StaticReport report = MergeStatic(build.resources, sass);
  report.cuobjdump = tool;
  report.sass_text = std::move(sass_text);
  report.notes.insert(report.notes.end(), notes.begin(), notes.end());
  return report;
}

const StaticKernel* FindStaticKernel(const StaticReport& report, const std::string& name) {
  for (const auto& k : report.kernels) {
    if (k.kernel == name || k.demangled == name) return &k;
  }
  return nullptr;
}

Json ToJson(const StaticReport& report) {
  Json kernels = Json::array();
  for (const auto& k : report.kernels) {
    Json j{{"kernel", k.kernel}, {"demangled", k.demangled}, {"arch", k.arch}};
    if (k.resources) j["resources"] = ToJson(*k.resources);
    if (k.sass) j["sass"] = ToJson(k.sass->mix);
    kernels.push_back(std::move(j));
  }
  return Json{{"kernels", kernels}, {"cuobjdump", report.cuobjdump},
              {"sass_available", report.sass_available}, {"notes", report.notes}};
}

}  // namespace kopt
