// Robust summaries of timing samples: median with a confidence interval.
#pragma once

#include <vector>

#include "core/json.h"

namespace kopt {

struct SampleSummary {
  int n = 0;
  double median = 0;
  double ci_low = 0;   ///< 95% order-statistic interval for the median
  double ci_high = 0;
  double min = 0;
  double max = 0;
  /// Half-width of the interval relative to the median.
  double RelativeHalfWidth() const {
    return median > 0 ? (ci_high - ci_low) / (2 * median) : 0;
  }
};

/// Median and a distribution-free 95% interval (binomial order statistics).
SampleSummary Summarize(std::vector<double> samples);

/// Median of the samples (0 for none).
double Median(std::vector<double> samples);

Json ToJson(const SampleSummary& s);
SampleSummary SampleSummaryFromJson(const Json& j);

}  // namespace kopt
