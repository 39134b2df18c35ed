#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace kopt {
namespace {

// The interval rule's home: the 95% interval of the median is the sorted
// samples at 1-based ranks floor(n/2 - 1.96·√n/2) and ceil(1 + n/2 +
// 1.96·√n/2), clamped into the samples; returned 0-based. python/kopt/
// timing.py (median_interval_ranks) mirrors it, so the worker stops
// repeating at the interval the verdict reports; tests/data/stats/
// intervals.json pins both to the same cases (core_test.cc,
// python/tests/test_units.py).
std::pair<size_t, size_t> MedianIntervalRanks(size_t count) {
  if (count == 0) return {0, 0};
  // The number of samples below the median is Binomial(n, 1/2); its normal
  // approximation puts 95% of it within n/2 ± 1.96·√n/2, so the samples at
  // those ranks bound the median with ~95% confidence for any continuous
  // distribution (a little more: the ranks round outwards).
  const double n = static_cast<double>(count);
  const double z = 1.96;
  long lo = static_cast<long>(std::floor(n / 2 - z * std::sqrt(n) / 2)) - 1;  // 1-based rank, then 0-based
  long hi = static_cast<long>(std::ceil(n / 2 + z * std::sqrt(n) / 2));       // ceil(1 + ...) - 1
  const long last = static_cast<long>(count) - 1;
  return {static_cast<size_t>(std::clamp(lo, 0L, last)), static_cast<size_t>(std::clamp(hi, 0L, last))};
}

}  // namespace

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
  auto [lo, hi] = MedianIntervalRanks(v.size());
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
