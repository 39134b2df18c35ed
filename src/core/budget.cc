#include "core/budget.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace kopt {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void Bad(const std::string& text, const std::string& why) {
  throw Error(
      fmt::format("--budget '{}' is not a budget ({}): write e.g. 10m, 40 (candidates), or "
                  "wall=30m,gpu=10m,candidates=200,tokens=2e6,cost=5",
                  text, why));
}

// "1h30m", "90s", "2.5m", "45" (seconds) -> seconds; < 0 when malformed.
double ParseDuration(const std::string& s) {
  if (s.empty()) return -1;
  double total = 0;
  size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
    if (j == i) return -1;
    double v;
    try {
      v = std::stod(s.substr(i, j - i));
    } catch (...) {
      return -1;
    }
    double unit = 1;
    if (j < s.size()) {
      char u = s[j];
      if (u == 'h')
        unit = 3600;
      else if (u == 'm')
        unit = 60;
      else if (u == 's')
        unit = 1;
      else
        return -1;
      ++j;
    } else if (any) {
      return -1;  // "1h30" is ambiguous
    }
    total += v * unit;
    any = true;
    i = j;
  }
  return total;
}

bool IsDuration(const std::string& s) {
  return !s.empty() &&
         std::any_of(s.begin(), s.end(), [](char c) { return c == 'h' || c == 'm' || c == 's'; });
}

double ParseNumber(const std::string& text, const std::string& s) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) Bad(text, "'" + s + "' is not a number");
    return v;
  } catch (const Error&) {
    throw;
  } catch (...) {
    Bad(text, "'" + s + "' is not a number");
  }
}

std::string Seconds(double s) {
  if (s >= 3600) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 60) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.0f} s", s);
}

}  // namespace

bool BudgetLimits::Unlimited() const {
  return wall_s <= 0 && gpu_s <= 0 && candidates <= 0 && llm_tokens <= 0 && llm_cost_usd <= 0;
}

BudgetLimits DefaultBudget(std::size_t tasks) {
  BudgetLimits l;
  l.wall_s = std::max(kDefaultWallS, kDefaultWallPerTaskS * static_cast<double>(tasks));
  return l;
}

BudgetLimits ParseBudget(const std::string& raw) {
  std::string text;
  for (char c : raw)
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  if (text.empty()) Bad(raw, "it is empty");
  BudgetLimits l;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) Bad(raw, "an empty item");
    auto eq = item.find('=');
    std::string key = eq == std::string::npos ? "" : item.substr(0, eq);
    std::string val = eq == std::string::npos ? item : item.substr(eq + 1);
    if (key.empty()) key = IsDuration(val) ? "wall" : "candidates";
    if (key == "wall" || key == "gpu") {
      double s = ParseDuration(val);
      if (s < 0) Bad(raw, "'" + val + "' is not a duration");
      if (s == 0) Bad(raw, key + " time must be positive");
      (key == "wall" ? l.wall_s : l.gpu_s) = s;
    } else if (key == "candidates" || key == "tokens") {
      double v = ParseNumber(raw, val);
      if (v < 1 || v != std::floor(v)) Bad(raw, key + " must be a positive whole number");
      (key == "candidates" ? l.candidates : l.llm_tokens) = static_cast<long long>(v);
    } else if (key == "cost") {
      double v = ParseNumber(raw, val);
      if (v <= 0) Bad(raw, "cost must be positive");
      l.llm_cost_usd = v;
    } else {
      Bad(raw, "unknown key '" + key + "'");
    }
  }
  return l;
}

std::string DescribeLimits(const BudgetLimits& l) {
  std::vector<std::string> parts;
  if (l.wall_s > 0) parts.push_back("wall " + Seconds(l.wall_s));
  if (l.gpu_s > 0) parts.push_back("GPU " + Seconds(l.gpu_s));
  if (l.candidates > 0) parts.push_back(fmt::format("{} candidates", l.candidates));
  if (l.llm_tokens > 0) parts.push_back(fmt::format("{} LLM tokens", l.llm_tokens));
  if (l.llm_cost_usd > 0) parts.push_back(fmt::format("${:.2f} LLM cost", l.llm_cost_usd));
  if (parts.empty()) return "unlimited";
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s;
}

std::string DescribeSpent(const BudgetSpent& s) {
  std::string out = fmt::format("wall {}, GPU {}, {} candidates", Seconds(s.wall_s),
                                Seconds(s.gpu_s), s.candidates);
  if (s.llm_tokens > 0 || s.llm_cost_usd > 0)
    out += fmt::format(", {} LLM tokens (${:.2f})", s.llm_tokens, s.llm_cost_usd);
  return out;
}

Json ToJson(const BudgetLimits& l) {
  return Json{{"wall_s", l.wall_s},
              {"gpu_s", l.gpu_s},
              {"candidates", l.candidates},
              {"llm_tokens", l.llm_tokens},
              {"llm_cost_usd", l.llm_cost_usd}};
}

Json ToJson(const BudgetSpent& s) {
  return Json{{"wall_s", s.wall_s},
              {"gpu_s", s.gpu_s},
              {"candidates", s.candidates},
              {"llm_tokens", s.llm_tokens},
              {"llm_cost_usd", s.llm_cost_usd}};
}

BudgetLimits BudgetLimitsFromJson(const Json& j) {
  BudgetLimits l;
  l.wall_s = NumberOr(j, "wall_s");
  l.gpu_s = NumberOr(j, "gpu_s");
  l.candidates = static_cast<long long>(NumberOr(j, "candidates"));
  l.llm_tokens = static_cast<long long>(NumberOr(j, "llm_tokens"));
  l.llm_cost_usd = NumberOr(j, "llm_cost_usd");
  return l;
}

BudgetSpent BudgetSpentFromJson(const Json& j) {
  BudgetSpent s;
  s.wall_s = NumberOr(j, "wall_s");
  s.gpu_s = NumberOr(j, "gpu_s");
  s.candidates = static_cast<long long>(NumberOr(j, "candidates"));
  s.llm_tokens = static_cast<long long>(NumberOr(j, "llm_tokens"));
  s.llm_cost_usd = NumberOr(j, "llm_cost_usd");
  return s;
}

Budget::Budget(BudgetLimits limits, std::function<double()> now_s)
    : limits_(limits), now_s_(now_s ? std::move(now_s) : SteadySeconds) {
  start_s_ = now_s_();
}

void Budget::Restore(const BudgetSpent& spent) {
  std::lock_guard<std::mutex> lock(mu_);
  spent_ = spent;
  wall_before_ = spent.wall_s;
  start_s_ = now_s_();
}

void Budget::AddGpuSeconds(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  spent_.gpu_s += std::max(0.0, s);
}

void Budget::AddCandidate() {
  std::lock_guard<std::mutex> lock(mu_);
  ++spent_.candidates;
}

void Budget::AddLlm(long long tokens, double cost_usd) {
  std::lock_guard<std::mutex> lock(mu_);
  spent_.llm_tokens += std::max(0LL, tokens);
  spent_.llm_cost_usd += std::max(0.0, cost_usd);
}

double Budget::WallLocked() const { return wall_before_ + (now_s_() - start_s_); }

bool Budget::Exhausted() const { return !ExhaustedReason().empty(); }

bool Budget::CountsExhausted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return (limits_.candidates > 0 && spent_.candidates >= limits_.candidates) ||
         (limits_.llm_tokens > 0 && spent_.llm_tokens >= limits_.llm_tokens) ||
         (limits_.llm_cost_usd > 0 && spent_.llm_cost_usd >= limits_.llm_cost_usd);
}

std::string Budget::ExhaustedReason() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (limits_.wall_s > 0 && WallLocked() >= limits_.wall_s)
    return fmt::format("wall time ({}) spent", Seconds(limits_.wall_s));
  if (limits_.gpu_s > 0 && spent_.gpu_s >= limits_.gpu_s)
    return fmt::format("GPU time ({}) spent", Seconds(limits_.gpu_s));
  if (limits_.candidates > 0 && spent_.candidates >= limits_.candidates)
    return fmt::format("{} candidates evaluated", limits_.candidates);
  if (limits_.llm_tokens > 0 && spent_.llm_tokens >= limits_.llm_tokens)
    return fmt::format("{} LLM tokens spent", limits_.llm_tokens);
  if (limits_.llm_cost_usd > 0 && spent_.llm_cost_usd >= limits_.llm_cost_usd)
    return fmt::format("LLM cost (${:.2f}) spent", limits_.llm_cost_usd);
  return "";
}

double Budget::FractionSpent() const {
  std::lock_guard<std::mutex> lock(mu_);
  double f = 0;
  if (limits_.wall_s > 0) f = std::max(f, WallLocked() / limits_.wall_s);
  if (limits_.gpu_s > 0) f = std::max(f, spent_.gpu_s / limits_.gpu_s);
  if (limits_.candidates > 0)
    f = std::max(f, double(spent_.candidates) / double(limits_.candidates));
  if (limits_.llm_tokens > 0)
    f = std::max(f, double(spent_.llm_tokens) / double(limits_.llm_tokens));
  if (limits_.llm_cost_usd > 0) f = std::max(f, spent_.llm_cost_usd / limits_.llm_cost_usd);
  return std::min(f, 1.0);
}

BudgetSpent Budget::Spent() const {
  std::lock_guard<std::mutex> lock(mu_);
  BudgetSpent s = spent_;
  s.wall_s = WallLocked();
  return s;
}

}  // namespace kopt
