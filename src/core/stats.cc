#include "core/stats.h"

#include <algorithm>
#include <cmath>

namespace kopt {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

SampleSummary Summarize(std::vector<double> v) {
  SampleSummary s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = Median(v);
  // Ranks n/2 ∓ 1.96·√n/2 bound the median with ~95% confidence for any
  // continuous distribution (normal approximation to Binomial(n, 1/2)).
  double n = static_cast<double>(v.size());
  double half = 1.96 * std::sqrt(n) / 2;
  long lo = static_cast<long>(std::floor(n / 2 - half));
  long hi = static_cast<long>(std::ceil(n / 2 + half));
  lo = std::clamp(lo, 0L, static_cast<long>(v.size()) - 1);
  hi = std::clamp(hi, 0L, static_cast<long>(v.size()) - 1);
  s.ci_low = v[lo];
  s.ci_high = v[hi];
  return s;
}

Json ToJson(const SampleSummary& s) {
  return Json{{"n", s.n},          {"median", s.median}, {"ci_low", s.ci_low},
              {"ci_high", s.ci_high}, {"min", s.min},       {"max", s.max}};
}

SampleSummary SampleSummaryFromJson(const Json& j) {
  SampleSummary s;
  s.n = j.value("n", 0);
  s.median = j.value("median", 0.0);
  s.ci_low = j.value("ci_low", 0.0);
  s.ci_high = j.value("ci_high", 0.0);
  s.min = j.value("min", 0.0);
  s.max = j.value("max", 0.0);
  return s;
}

}  // namespace kopt
