#include "core/outcome.h"

#include <fmt/format.h>

namespace kopt {
namespace {
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

std::string FirstLine(const std::string& s, size_t max_len = 160) {
  auto nl = s.find('\n');
  std::string line = s.substr(0, nl);
  if (line.size() > max_len) line = line.substr(0, max_len) + "...";
  return line;
}
}  // namespace

std::string BuildFailureReason(const std::string& log) {
  std::string kopt_line, first;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    if (first.empty()) first = line;
    if (line.rfind("kopt:", 0) == 0)
      kopt_line = line;
    else if (line.find("error") != std::string::npos)
      return FirstLine(line);
  }
  return FirstLine(kopt_line.empty() ? first : kopt_line);
}

std::string OutcomeName(const Outcome& o) {
  return std::visit(Overloaded{
                        [](const BuildFailed&) { return std::string("build_failed"); },
                        [](const Incorrect&) { return std::string("incorrect"); },
                        [](const Crashed&) { return std::string("crashed"); },
                        [](const TimedOut&) { return std::string("timed_out"); },
                        [](const Measured&) { return std::string("measured"); },
                    },
                    o);
}

std::string OutcomeLine(const Outcome& o) {
  return std::visit(
      Overloaded{
          [](const BuildFailed& b) { return "build failed: " + BuildFailureReason(b.log); },
          [](const Incorrect& i) {
            return "incorrect: " + (i.reasons.empty() ? std::string("outputs differ") : i.reasons.front());
          },
          [](const Crashed& c) { return "crashed (" + c.kind + "): " + FirstLine(c.message); },
          [](const TimedOut& t) {
            return fmt::format("timed out after {:.1f} s in {}", t.after_s, t.phase);
          },
          [](const Measured& m) {
            std::string s = fmt::format("correct, {:.4g} ms", m.time_ms.median);
            if (auto sp = m.SpeedupVsEager()) s += fmt::format(" ({:.2f}x vs eager)", *sp);
            return s;
          },
      },
      o);
}

Json ToJson(const Outcome& o) {
  Json j{{"verdict", OutcomeName(o)}, {"summary", OutcomeLine(o)}};
  std::visit(Overloaded{
                 [&](const BuildFailed& b) { j["log"] = b.log; },
                 [&](const Incorrect& i) { j["reasons"] = i.reasons; },
                 [&](const Crashed& c) {
                   j["kind"] = c.kind;
                   j["message"] = c.message;
                 },
                 [&](const TimedOut& t) {
                   j["phase"] = t.phase;
                   j["after_s"] = t.after_s;
                 },
                 [&](const Measured& m) {
                   j["time_ms"] = ToJson(m.time_ms);
                   j["host_ms"] = ToJson(m.host_ms);
                   if (m.eager_ms) j["eager_ms"] = ToJson(*m.eager_ms);
                   if (m.compile_ms) j["compile_ms"] = ToJson(*m.compile_ms);
                   if (m.clean_eager_ms) j["clean_eager_ms"] = ToJson(*m.clean_eager_ms);
                   if (m.clean_compile_ms) j["clean_compile_ms"] = ToJson(*m.clean_compile_ms);
                   if (auto sp = m.SpeedupVsEager()) j["speedup_vs_eager"] = *sp;
                   if (auto sp = m.SpeedupVsCompile()) j["speedup_vs_compile"] = *sp;
                   if (m.energy_mj_per_call) j["energy_mj_per_call"] = *m.energy_mj_per_call;
                   if (m.eager_energy_mj_per_call) j["eager_energy_mj_per_call"] = *m.eager_energy_mj_per_call;
                   j["warnings"] = m.warnings;
                   j["notes"] = m.notes;
                 },
             },
             o);
  return j;
}

Outcome OutcomeFromJson(const Json& j) {
  const std::string kind = j.is_object() ? j.value("verdict", "") : "";
  auto strings = [&](const char* key) {
    std::vector<std::string> v;
    if (j.contains(key) && j[key].is_array())
      for (const auto& x : j[key])
        if (x.is_string()) v.push_back(x.get<std::string>());
    return v;
  };
  if (kind == "build_failed") return BuildFailed{j.value("log", "")};
  if (kind == "incorrect") return Incorrect{strings("reasons")};
  if (kind == "crashed") return Crashed{j.value("kind", ""), j.value("message", "")};
  if (kind == "timed_out") return TimedOut{j.value("phase", ""), NumberOr(j, "after_s")};
  if (kind == "measured") {
    Measured m;
    auto summary = [&](const char* key) -> std::optional<SampleSummary> {
      if (!j.contains(key) || !j[key].is_object()) return std::nullopt;
      return SampleSummaryFromJson(j[key]);
    };
    if (auto s = summary("time_ms")) m.time_ms = *s;
    if (auto s = summary("host_ms")) m.host_ms = *s;
    m.eager_ms = summary("eager_ms");
    m.compile_ms = summary("compile_ms");
    m.clean_eager_ms = summary("clean_eager_ms");
    m.clean_compile_ms = summary("clean_compile_ms");
    if (j.contains("energy_mj_per_call") && j["energy_mj_per_call"].is_number())
      m.energy_mj_per_call = j["energy_mj_per_call"].get<double>();
    if (j.contains("eager_energy_mj_per_call") && j["eager_energy_mj_per_call"].is_number())
      m.eager_energy_mj_per_call = j["eager_energy_mj_per_call"].get<double>();
    m.warnings = strings("warnings");
    m.notes = strings("notes");
    return m;
  }
  return Crashed{"internal", "unreadable outcome record: " + j.dump().substr(0, 200)};
}

}  // namespace kopt
