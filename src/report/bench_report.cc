#include "report/bench_report.h"

#include <fmt/format.h>

#include "report/table.h"

namespace kopt {
namespace {

std::string Ms(const std::optional<double>& v) { return v ? FormatMs(*v) : "-"; }
std::string Ratio(const std::optional<double>& v) { return v ? FormatRatio(*v) : "-"; }

}  // namespace

Json ToJson(const BenchRow& r) {
  Json j{{"task", r.task}, {"solution", r.solution}, {"kind", r.kind}, {"verdict", r.verdict}, {"reason", r.reason},
         {"flags", r.flags}};
  auto put = [&](const char* k, const std::optional<double>& v) { j[k] = v ? Json(*v) : Json(nullptr); };
  put("eager_ms", r.eager_ms);
  put("compile_ms", r.compile_ms);
  put("floor_ms", r.floor_ms);
  put("time_ms", r.time_ms);
  put("speedup_vs_eager", r.speedup_vs_eager);
  put("speedup_vs_compile", r.speedup_vs_compile);
  put("floor_fraction", r.floor_fraction);
  put("energy_mj_per_call", r.energy_mj);
  put("source_to_verdict_s", r.source_to_verdict_s);
  return j;
}

BenchRow BenchRowFromJson(const Json& j) {
  BenchRow r;
  if (!j.is_object()) return r;
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
  auto num = [&](const char* k) -> std::optional<double> {
    if (!j.contains(k) || !j[k].is_number()) return std::nullopt;
    return j[k].get<double>();
  };
  r.task = str("task");
  r.solution = str("solution");
  r.kind = str("kind");
  r.verdict = str("verdict");
  r.reason = str("reason");
  if (j.contains("flags") && j["flags"].is_array())
    for (const auto& f : j["flags"])
      if (f.is_string()) r.flags.push_back(f.get<std::string>());
  r.eager_ms = num("eager_ms");
  r.compile_ms = num("compile_ms");
  r.floor_ms = num("floor_ms");
  r.time_ms = num("time_ms");
  r.speedup_vs_eager = num("speedup_vs_eager");
  r.speedup_vs_compile = num("speedup_vs_compile");
  r.floor_fraction = num("floor_fraction");
  r.energy_mj = num("energy_mj_per_call");
  r.source_to_verdict_s = num("source_to_verdict_s");
  return r;
}

std::string RenderBenchTable(const std::vector<BenchRow>& rows) {
  Table t({"task", "solution", "eager ms", "compile ms", "floor ms", "ms", "vs eager", "vs compile", "of floor",
           "verdict"});
  std::vector<std::string> notes;
  for (const auto& r : rows) {
    std::string verdict = r.verdict == "measured" ? "correct" : r.verdict;
    if (!r.reason.empty()) {
      notes.push_back(fmt::format("[{}] {} {}: {}", notes.size() + 1, r.task, r.solution, r.reason));
      verdict += fmt::format(" [{}]", notes.size());
    }
    t.AddRow({r.task, r.solution.empty() ? "-" : r.solution, Ms(r.eager_ms), Ms(r.compile_ms), Ms(r.floor_ms),
              Ms(r.time_ms), Ratio(r.speedup_vs_eager), Ratio(r.speedup_vs_compile),
              r.floor_fraction ? FormatPercent(*r.floor_fraction) : "-", verdict});
  }
  std::string out = t.Render();
  for (const auto& n : notes) out += n + "\n";
  return out;
}

}  // namespace kopt
