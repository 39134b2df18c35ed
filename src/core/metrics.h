// Per-kernel hardware metrics as a record: the flat map every layer can hold
// (profiles, a diagnosis's evidence); what the names mean is profile/metrics.h.
#pragma once

#include <map>
#include <string>

#include "core/json.h"

namespace kopt {

/// Metric name (as ncu spells it, e.g. "dram__bytes.sum") to value. Times are
/// nanoseconds, sizes bytes, rates per second, percentages 0..100. A flat map
/// only because profiler metrics are open-ended.
using Metrics = std::map<std::string, double>;

/// A JSON object, name -> number.
Json ToJson(const Metrics& m);
/// The numbers of a JSON object; anything else (a non-object, a value that
/// is not a number) is left out.
Metrics MetricsFromJson(const Json& j);

}  // namespace kopt
