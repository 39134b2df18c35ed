#include "core/metrics.h"

namespace kopt {

Json ToJson(const Metrics& m) {
  Json j = Json::object();
  for (const auto& [name, value] : m) j[name] = value;
  return j;
}

Metrics MetricsFromJson(const Json& j) {
  Metrics m;
  if (!j.is_object()) return m;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_number()) m[it.key()] = it.value().get<double>();
  }
  return m;
}

}  // namespace kopt
