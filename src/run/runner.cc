#include "run/runner.h"

namespace kopt {

Json ToJson(const EvalRecord& r) {
  Json j{{"task", r.task_name},
         {"candidate", r.candidate_name},
         {"kind", r.candidate_kind},
         {"source_hash", r.source_hash},
         {"outcome", ToJson(r.outcome)},
         {"build_s", r.build_s},
         {"verify_s", r.verify_s},
         {"time_s", r.time_s},
         {"source_to_verdict_s", r.source_to_verdict_s},
         {"floor_ms", r.floor_ms}};
  if (!r.contract.is_null()) j["contract"] = r.contract;
  Json skipped = Json::array();
  for (const auto& [name, why] : r.trust.distributions.skipped) skipped.push_back({{"name", name}, {"why", why}});
  j["trust"] = {{"distributions_checked", r.trust.distributions.checked},
                {"distributions_skipped", skipped},
                {"clean_reference", r.trust.clean_reference},
                {"sandbox", r.trust.sandbox}};
  if (r.build) j["build"] = ToJson(*r.build);
  if (!r.clean.is_null()) j["clean"] = r.clean;
  if (!r.checks.is_null()) j["checks"] = r.checks;
  if (!r.timing.is_null()) j["timing"] = r.timing;
  return j;
}

EvalRecord EvalRecordFromJson(const Json& j) {
  EvalRecord r;
  r.task_name = j.value("task", "");
  r.candidate_name = j.value("candidate", "");
  r.candidate_kind = j.value("kind", "");
  r.source_hash = j.value("source_hash", "");
  r.outcome = OutcomeFromJson(j.value("outcome", Json::object()));
  if (j.contains("build") && j["build"].is_object()) r.build = BuildResultFromJson(j["build"]);
  r.build_s = NumberOr(j, "build_s");
  r.verify_s = NumberOr(j, "verify_s");
  r.time_s = NumberOr(j, "time_s");
  r.source_to_verdict_s = NumberOr(j, "source_to_verdict_s");
  r.floor_ms = NumberOr(j, "floor_ms");
  r.contract = j.value("contract", Json());
  if (j.contains("trust") && j["trust"].is_object()) {
    const Json& t = j["trust"];
    r.trust.distributions.checked = t.value("distributions_checked", std::vector<std::string>{});
    for (const auto& s : t.value("distributions_skipped", Json::array()))
      r.trust.distributions.skipped.push_back({s.value("name", ""), s.value("why", "")});
    r.trust.clean_reference = t.value("clean_reference", false);
    r.trust.sandbox = t.value("sandbox", Json());
  }
  r.clean = j.value("clean", Json());
  r.checks = j.value("checks", Json());
  r.timing = j.value("timing", Json());
  return r;
}

}  // namespace kopt
