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
                   if (auto sp = m.SpeedupVsEager()) j["speedup_vs_eager"] = *sp;
                   if (m.energy_mj_per_call) j["energy_mj_per_call"] = *m.energy_mj_per_call;
                   if (m.eager_energy_mj_per_call) j["eager_energy_mj_per_call"] = *m.eager_energy_mj_per_call;
                   j["warnings"] = m.warnings;
                 },
             },
             o);
  return j;
}

}  // namespace kopt
