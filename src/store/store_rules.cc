#include "store/store_rules.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"

namespace kopt::store_rules {
namespace {

std::tm UtcTm(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return tm;
}

}  // namespace

WallClock ClockOr(WallClock now) {
  if (now) return now;
  return [] { return std::chrono::system_clock::now(); };
}

std::string IsoUtc(std::chrono::system_clock::time_point t) {
  std::tm tm = UtcTm(t);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  if (ms < 0) ms += 1000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

std::string NewRunId(std::chrono::system_clock::time_point t, std::mt19937_64& rng) {
  std::tm tm = UtcTm(t);
  return fmt::format("{:04}{:02}{:02}-{:02}{:02}-{:04x}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, static_cast<unsigned>(rng() & 0xffff));
}

std::mt19937_64 SeededRng() {
  std::random_device rd;
  std::seed_seq seq{rd(), rd(), rd(), rd()};
  return std::mt19937_64(seq);
}

void ThrowNoFreeRunId() {
  throw Error(
      "Found no free run id for this minute after many tries: start the run again in a minute.");
}

std::string NormalizePrefix(const std::string& prefix) {
  std::string s = prefix;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

void ThrowAmbiguousPrefix(const std::string& prefix, const std::vector<std::string>& matches) {
  std::string list;
  for (size_t i = 0; i < matches.size() && i < 5; ++i) list += (i ? ", " : "") + matches[i];
  if (matches.size() > 5) list += ", ...";
  throw Error(
      fmt::format("Run id '{}' fits several runs ({}): type more of the id.", prefix, list));
}

Json BundleToStored(const TaskBundle& b) { return ToJson(b); }

TaskBundle BundleFromStored(const Json& j) { return BundleFromJson(j); }

Json ContractToStored(const Contract& c) { return ToJson(c); }

Contract ContractFromStored(const Json& j) {
  Json fields = j;
  std::string source = "default";
  if (fields.is_object() && fields.contains("source")) {
    if (fields["source"].is_string()) source = fields["source"].get<std::string>();
    fields.erase("source");
  }
  return ContractFromJson(fields, source);
}

std::string DumpJson(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json AsStored(const Json& j) { return Json::parse(DumpJson(j)); }

std::optional<double> FiniteOrNone(std::optional<double> v) {
  if (v && std::isnan(*v)) return std::nullopt;
  return v;
}

void CheckOutcome(const OutcomeRecord& o) {
  const std::string& v = o.verdict;
  if (v != "build_failed" && v != "incorrect" && v != "crashed" && v != "timed_out" &&
      v != "measured")
    ThrowBadCall("'" + v + "' is not a verdict (OutcomeName gives them)");
  if (!std::isfinite(o.gpu_s) || o.gpu_s < 0) ThrowBadCall("gpu_s must be finite and not negative");
}

void CheckSpent(const BudgetSpent& s) {
  if (!std::isfinite(s.wall_s) || !std::isfinite(s.gpu_s) || !std::isfinite(s.llm_cost_usd))
    ThrowBadCall("a spent budget must be finite");
}

void ThrowBadCall(const std::string& what) { throw std::invalid_argument("RunStore: " + what); }

std::optional<double> FinalistWinnerSpeedup(const Json& finalists) {
  if (!finalists.is_array()) return std::nullopt;
  for (const auto& f : finalists)
    if (f.is_object() && f.value("winner", false) && f.contains("speedup_vs_eager") &&
        f["speedup_vs_eager"].is_number())
      return FiniteOrNone(f["speedup_vs_eager"].get<double>());
  return std::nullopt;
}

bool KeepsReference(std::optional<double> winner_speedup_vs_eager) {
  return winner_speedup_vs_eager && *winner_speedup_vs_eager <= 1.0;
}

}  // namespace kopt::store_rules
