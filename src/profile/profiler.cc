#include "profile/profiler.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <map>

#include "core/subprocess.h"
#include "profile/metrics.h"

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
  // A hybrid's kopt.load_cuda builds through `kopt build`: this kopt.
  if (const char* bin = std::getenv("KOPT_BIN"); bin && *bin) {
    po.env["KOPT_BIN"] = bin;
  } else {
    std::error_code ec;
    std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && exe.filename() == "kopt") po.env["KOPT_BIN"] = exe.string();
  }
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
    if (target.max_launches > 0) {
      // Every launch costs ncu its replay passes (1-2 s each on the H200 with
      // a few hundred MB of buffers): a call of 32 launches did not finish in
      // 40 s. The first launches stand for the rest; the timeline counts all.
      argv.push_back("--launch-count");
      argv.push_back(std::to_string(target.max_launches * std::max(1, target.calls)));
    }
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

  NcuRun Source(const ProfileTarget& target, const std::string& kernel) override {
    NcuRun run;
    if (ncu_.empty()) {
      run.error = "Nsight Compute (ncu) was not found; install it or set KOPT_NCU to its path";
      return run;
    }
    char tmpl[] = "/tmp/kopt-ncu-src-XXXXXX";
    if (!mkdtemp(tmpl)) {
      run.error = "cannot create a temporary folder for ncu's report";
      return run;
    }
    std::filesystem::path dir = tmpl;
    std::string rep = (dir / "source").string();
    std::vector<std::string> argv = {ncu_,          "--clock-control", "none", "--profile-from-start", "off",
                                     "--section",   "SourceCounters",  "--section", "WarpStateStats",
                                     "--kernel-name", "regex:" + kernel, "--launch-count", "1",
                                     "--export",    rep,               "--force-overwrite"};
    for (const auto& a : RunnerArgs(target, "ncu")) argv.push_back(a);
    auto t0 = std::chrono::steady_clock::now();
    ProcessResult r = RunProcess(argv, RunnerEnv(target));
    if (r.ok()) {
      ProcessOptions po;
      po.timeout_s = 120;
      ProcessResult p = RunProcess({ncu_, "--import", rep + ".ncu-rep", "--page", "source", "--csv",
                                    "--print-source", "sass"},
                                   po);
      if (p.ok()) {
        run.csv = p.out;
        run.ok = true;
      } else {
        run.error = Failure("reading ncu's source page", p);
      }
    } else {
      run.error = Failure("ncu's source counters", r);
    }
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
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

namespace {

// The source page names stall reasons shorter than the metrics do.
std::string StallReasonOfColumn(const std::string& column) {
  static const std::map<std::string, std::string> kShort = {
      {"long_sb", "long_scoreboard"},  {"short_sb", "short_scoreboard"}, {"mio", "mio_throttle"},
      {"lg", "lg_throttle"},           {"tex", "tex_throttle"},          {"math", "math_pipe_throttle"},
      {"dispatch", "dispatch_stall"},  {"no_inst", "no_instruction"},    {"imc", "imc_miss"},
      {"sleep", "sleeping"}};
  const std::string prefix = "stall_";
  if (column.rfind(prefix, 0) != 0 || column.find(' ') != std::string::npos) return "";
  std::string r = column.substr(prefix.size());
  if (auto it = kShort.find(r); it != kShort.end()) return it->second;
  const auto& known = StallReasons();
  return std::find(known.begin(), known.end(), r) != known.end() ? r : "";
}

std::string Trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

SourceHotspots ParseSourcePage(const std::string& csv, size_t top) {
  SourceHotspots h;
  std::vector<std::string> header;
  int addr = -1, src = -1, stall = -1, exec = -1;
  std::vector<std::pair<int, std::string>> reason_columns;  // "selected" is issuing: left out
  std::vector<SourceLine> lines;
  size_t pos = 0;
  while (pos < csv.size()) {
    size_t end = csv.find('\n', pos);
    if (end == std::string::npos) end = csv.size();
    std::string line = csv.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] != '"') continue;
    std::vector<std::string> cells = SplitCsvRecord(line);
    if (header.empty()) {
      for (size_t i = 0; i < cells.size(); ++i) {
        const std::string& c = cells[i];
        if (addr < 0 && c.find("Address") != std::string::npos) addr = static_cast<int>(i);
        if (src < 0 && c == "Source") src = static_cast<int>(i);
        if (c.find("Stall Sampling") != std::string::npos && c.find("All") != std::string::npos && stall < 0)
          stall = static_cast<int>(i);
        if (exec < 0 && c.find("Instructions Executed") != std::string::npos && c.find("Thread") == std::string::npos)
          exec = static_cast<int>(i);
      }
      if (stall < 0)
        for (size_t i = 0; i < cells.size() && stall < 0; ++i)
          if (cells[i].find("Stall Sampling") != std::string::npos) stall = static_cast<int>(i);
      if (addr >= 0 && src >= 0) {
        header = cells;
        if (stall >= 0) h.stall_column = cells[stall];
        for (size_t i = 0; i < cells.size(); ++i) {
          std::string r = StallReasonOfColumn(cells[i]);
          if (!r.empty() && r != "selected") reason_columns.emplace_back(static_cast<int>(i), r);
        }
      } else {
        addr = src = stall = exec = -1;
      }
      continue;
    }
    auto cell = [&](int i) { return i >= 0 && i < static_cast<int>(cells.size()) ? cells[i] : std::string(); };
    SourceLine l;
    l.address = cell(addr);
    l.source = Trimmed(cell(src));
    l.stall_samples = ParseNcuNumber(cell(stall)).value_or(0);
    l.executed = ParseNcuNumber(cell(exec)).value_or(0);
    for (const auto& [i, reason] : reason_columns) {
      double v = ParseNcuNumber(cell(i)).value_or(0);
      if (v > l.top_reason_samples) {
        l.top_reason_samples = v;
        l.top_reason = reason;
      }
    }
    h.total_samples += l.stall_samples;
    lines.push_back(std::move(l));
  }
  if (header.empty()) {
    h.error = "no source table (a header with Address and Source columns) in ncu's output";
    return h;
  }
  if (stall < 0) h.error = "the source table has no stall-sampling column";
  std::stable_sort(lines.begin(), lines.end(),
                   [](const SourceLine& a, const SourceLine& b) { return a.stall_samples > b.stall_samples; });
  if (lines.size() > top) lines.resize(top);
  h.top = std::move(lines);
  return h;
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
