#include "profile/profiler.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "core/subprocess.h"

namespace kopt {
namespace {

constexpr const char* kJsonTag = "KOPT_PROFILE_JSON ";

std::string Tail(const std::string& s, size_t n = 600) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

ProcessOptions RunnerEnv(const ProfileTarget& t) {
  ProcessOptions po;
  po.timeout_s = t.timeout_s;
  const char* old = std::getenv("PYTHONPATH");
  po.env["PYTHONPATH"] = (t.repo_root / "python").string() + (old && *old ? std::string(":") + old : "");
  po.env["PYTHONUNBUFFERED"] = "1";
  po.env["KOPT_ROOT"] = t.repo_root.string();
  po.env["KOPT_INCLUDE"] = (t.repo_root / "include").string();
  if (!t.cache_dir.empty()) po.env["KOPT_CACHE"] = (t.cache_dir / "so").string();
  if (!t.arch.empty()) po.env["KOPT_ARCH"] = t.arch;
  return po;
}

std::vector<std::string> RunnerArgs(const ProfileTarget& t, const std::string& mode) {
  return {t.python,         "-m",        "kopt.profile_run", "--task",  t.task.string(),
          "--kind",         t.kind,      "--candidate",      t.candidate.string(),
          "--device",       t.device,    "--mode",           mode,
          "--calls",        std::to_string(t.calls), "--warmup", std::to_string(t.warmup)};
}

std::string Failure(const std::string& what, const ProcessResult& r) {
  if (r.spawn_failed) return what + " could not be started: " + Tail(r.err);
  if (r.timed_out) return what + " timed out";
  std::string last;
  for (const std::string* s : {&r.err, &r.out}) {
    if (!s->empty()) {
      last = Tail(*s);
      break;
    }
  }
  return what + " failed (" +
         (r.term_signal ? "signal " + std::to_string(r.term_signal) : "exit " + std::to_string(r.exit_code)) +
         "): " + last;
}

class ProcessProfiler : public Profiler {
 public:
  explicit ProcessProfiler(std::string ncu) : ncu_(std::move(ncu)) {}

  NcuRun Ncu(const ProfileTarget& target, const std::vector<std::string>& metrics) override {
    NcuRun run;
    run.metrics = metrics;
    if (ncu_.empty()) {
      run.error = "Nsight Compute (ncu) was not found; install it or set KOPT_NCU to its path";
      return run;
    }
    // The CSV goes to its own file so the program's output cannot mix in.
    char tmpl[] = "/tmp/kopt-ncu-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) {
      run.error = "cannot create a temporary file for ncu's output";
      return run;
    }
    close(fd);
    std::string log = tmpl;
    std::string list;
    for (const auto& m : metrics) list += (list.empty() ? "" : ",") + m;
    std::vector<std::string> argv = {ncu_,  "--clock-control", "none", "--profile-from-start", "off",
                                     "--csv", "--page",        "raw",  "--log-file",           log,
                                     "--metrics", list};
    for (const auto& a : RunnerArgs(target, "ncu")) argv.push_back(a);
    auto t0 = std::chrono::steady_clock::now();
    ProcessResult r = RunProcess(argv, RunnerEnv(target));
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    try {
      run.csv = ReadTextFile(log);
    } catch (const std::exception&) {
    }
    std::remove(log.c_str());
    Json j = ProfileRunJson(r.out);
    if (j.is_object() && j.contains("loaded_so")) {
      for (const auto& s : j["loaded_so"]) run.loaded_so.push_back(s.get<std::string>());
    }
    if (!r.ok()) {
      run.error = Failure("ncu on the candidate", r);
      return run;
    }
    run.report = ParseNcuCsv(run.csv);
    if (!run.report.ok()) {
      run.error = "ncu printed no profile table: " + run.report.error;
      return run;
    }
    if (run.report.kernels.empty()) {
      run.error = "ncu saw no kernel launch between profiler start and stop";
      return run;
    }
    run.ok = true;
    return run;
  }

  TimelineRun Timeline(const ProfileTarget& target) override {
    TimelineRun run;
    auto t0 = std::chrono::steady_clock::now();
    ProcessResult r = RunProcess(RunnerArgs(target, "timeline"), RunnerEnv(target));
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) {
      run.error = Failure("the timeline run", r);
      return run;
    }
    run.timeline = ProfileRunJson(r.out);
    if (!run.timeline.is_object()) {
      run.error = "the timeline run printed no result line";
      return run;
    }
    run.ok = true;
    return run;
  }

 private:
  std::string ncu_;
};

}  // namespace

std::string FindNcu() {
  if (const char* e = std::getenv("KOPT_NCU"); e && *e) return e;
  std::string p = FindOnPath("ncu");
  if (!p.empty()) return p;
  if (std::filesystem::exists("/usr/local/cuda/bin/ncu")) return "/usr/local/cuda/bin/ncu";
  return "";
}

std::unique_ptr<Profiler> MakeProcessProfiler(std::string ncu) {
  if (ncu.empty()) ncu = FindNcu();
  return std::make_unique<ProcessProfiler>(std::move(ncu));
}

Json ProfileRunJson(const std::string& text) {
  size_t pos = text.rfind(kJsonTag);
  if (pos == std::string::npos) return nullptr;
  size_t start = pos + std::string(kJsonTag).size();
  size_t end = text.find('\n', start);
  try {
    return Json::parse(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace kopt
