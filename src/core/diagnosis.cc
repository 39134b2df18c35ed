#include "core/diagnosis.h"

#include <algorithm>

namespace kopt {
namespace {

std::string StringOr(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

void AppendFindings(const Json& list, std::vector<Diagnosis>* out) {
  if (!list.is_array()) return;
  for (const auto& d : list)
    if (d.is_object()) out->push_back(DiagnosisFromJson(d));
}

}  // namespace

Json ToJson(const Diagnosis& d) {
  Json j{{"tool", d.tool},
         {"severity", d.severity},
         {"estimated_gain", d.estimated_gain},
         {"evidence", ToJson(d.evidence)},
         {"advice", d.advice},
         {"suggested_moves", d.suggested_moves}};
  if (!d.kernel.empty()) j["kernel"] = d.kernel;
  if (d.call_gain) j["call_gain"] = *d.call_gain;
  return j;
}

void SortByCallGain(std::vector<Diagnosis>* ds) {
  std::stable_sort(ds->begin(), ds->end(), [](const Diagnosis& a, const Diagnosis& b) {
    return a.CallGain() > b.CallGain();
  });
}

Json ToJson(const std::vector<Diagnosis>& ds) {
  Json j = Json::array();
  for (const auto& d : ds) j.push_back(ToJson(d));
  return j;
}

Diagnosis DiagnosisFromJson(const Json& j) {
  Diagnosis d;
  if (!j.is_object()) return d;
  d.tool = StringOr(j, "tool");
  d.severity = StringOr(j, "severity");
  d.estimated_gain = NumberOr(j, "estimated_gain", 0);
  if (j.contains("evidence")) d.evidence = MetricsFromJson(j["evidence"]);
  d.advice = StringOr(j, "advice");
  d.kernel = StringOr(j, "kernel");
  if (j.contains("call_gain") && j["call_gain"].is_number())
    d.call_gain = j["call_gain"].get<double>();
  if (j.contains("suggested_moves") && j["suggested_moves"].is_array())
    for (const auto& m : j["suggested_moves"])
      if (m.is_string()) d.suggested_moves.push_back(m.get<std::string>());
  return d;
}

std::vector<Diagnosis> DiagnosesFromJson(const Json& j) {
  std::vector<Diagnosis> out;
  if (j.is_array()) {
    AppendFindings(j, &out);
  } else if (j.is_object()) {
    if (j.contains("call_diagnoses")) AppendFindings(j["call_diagnoses"], &out);
    if (j.contains("kernels") && j["kernels"].is_array())
      for (const auto& k : j["kernels"])
        if (k.is_object() && k.contains("diagnoses")) AppendFindings(k["diagnoses"], &out);
  }
  return out;
}

}  // namespace kopt
