#include "core/diagnosis.h"

#include <gtest/gtest.h>

#include "core/json.h"
#include "core/metrics.h"
#include "testing/paths.h"

namespace kopt {
namespace {

Diagnosis Sample() {
  Diagnosis d;
  d.tool = "bank_conflicts";
  d.severity = "warning";
  d.estimated_gain = 0.25;
  d.evidence = {{"conflicts_per_wavefront", 3.5}, {"l1tex__data_bank_conflicts.sum", 1024}};
  d.advice = "Pad the shared array.";
  d.suggested_moves = {"pad_shared", "swizzle"};
  return d;
}

TEST(Metrics, JsonKeepsOnlyNumbers) {
  Metrics m{{"a", 1.5}, {"b", -2}};
  EXPECT_EQ(MetricsFromJson(ToJson(m)), m);
  EXPECT_EQ(MetricsFromJson(Json{{"a", 1}, {"s", "text"}, {"n", nullptr}}), (Metrics{{"a", 1}}));
  EXPECT_TRUE(MetricsFromJson(Json::array({1, 2})).empty());
}

TEST(Diagnosis, JsonRoundTrip) {
  Diagnosis d = Sample();
  Json j = ToJson(d);
  EXPECT_EQ(j["tool"], "bank_conflicts");
  EXPECT_EQ(j["evidence"]["conflicts_per_wavefront"], 3.5);
  Diagnosis back = DiagnosisFromJson(j);
  EXPECT_EQ(back.tool, d.tool);
  EXPECT_EQ(back.severity, d.severity);
  EXPECT_EQ(back.estimated_gain, d.estimated_gain);
  EXPECT_EQ(back.evidence, d.evidence);
  EXPECT_EQ(back.advice, d.advice);
  EXPECT_EQ(back.suggested_moves, d.suggested_moves);
  EXPECT_EQ(ToJson(back), j);
}

TEST(Diagnosis, ReadsLeniently) {
  Diagnosis d = DiagnosisFromJson(Json{
      {"tool", "x"}, {"severity", 3}, {"estimated_gain", "big"}, {"suggested_moves", {"a", 1}}});
  EXPECT_EQ(d.tool, "x");
  EXPECT_EQ(d.severity, "");
  EXPECT_EQ(d.estimated_gain, 0);
  EXPECT_EQ(d.suggested_moves, std::vector<std::string>{"a"});
  EXPECT_EQ(DiagnosisFromJson(Json("not an object")).tool, "");
}

TEST(Diagnosis, ListsFromAnArrayOrAWholeReport) {
  Json one = ToJson(Sample());
  Json two = one;
  two["tool"] = "register_spills";
  EXPECT_EQ(DiagnosesFromJson(Json::array({one, 7, two})).size(), 2u);
  Json report{{"call_diagnoses", {two}},
              {"kernels", {{{"kernel", "k"}, {"diagnoses", {one, one}}}, 3}}};
  std::vector<Diagnosis> all = DiagnosesFromJson(report);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].tool, "register_spills");
  EXPECT_EQ(all[1].tool, "bank_conflicts");
  EXPECT_TRUE(DiagnosesFromJson(Json(nullptr)).empty());
  EXPECT_TRUE(DiagnosesFromJson(Json("x")).empty());
  EXPECT_EQ(ToJson(std::vector<Diagnosis>{}), Json::array());
}

// The findings recorded from real tool output read back to the same JSON:
// typed diagnoses keep the stored format.
TEST(Diagnosis, RecordedFindingsRoundTrip) {
  Json doc = ReadJsonFile(testing::SourceDir() / "tests/data/runs/fixture_diagnoses.json");
  ASSERT_FALSE(doc["entries"].empty());
  for (const auto& e : doc["entries"]) {
    EXPECT_EQ(ToJson(DiagnosesFromJson(e["diagnoses"])), e["diagnoses"]) << e["zoo"];
  }
}

}  // namespace
}  // namespace kopt
