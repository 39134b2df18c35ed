// Re-judges worker replies recorded on a real H200 (tests/data/gpu) with the
// current verdict policy: the policy runs in CI on real data, no GPU needed.
#include <gtest/gtest.h>

#include "core/json.h"
#include "run/verdict.h"
#include "task/bundle.h"
#include "testing/paths.h"

namespace kopt {
namespace {

TEST(Replay, RecordedReluFaultsKeepTheirVerdicts) {
  Json j = ReadJsonFile(testing::SourceDir() / "tests/data/gpu/eval_01_relu_faults.json");
  TaskBundle bundle = BundleFromJson(j["bundle"]);
  EXPECT_EQ(bundle.device.name, "NVIDIA H200");
  EXPECT_GT(bundle.floor_ms, 0);
  EXPECT_TRUE(bundle.flags.empty());
  int judged = 0;
  for (const auto& rec : j["records"]) {
    std::string recorded = rec["outcome"]["verdict"];
    if (!rec.contains("checks")) continue;  // crashed or timed out before any checks
    std::vector<std::string> reasons = JudgeChecks(rec["checks"], bundle, VerifyPolicy{});
    if (recorded == "incorrect") {
      EXPECT_FALSE(reasons.empty()) << rec["candidate"];
    } else {
      ASSERT_TRUE(reasons.empty()) << rec["candidate"] << ": " << reasons[0];
      Outcome o = JudgeTiming(rec["timing"], bundle, VerifyPolicy{});
      ASSERT_TRUE(std::holds_alternative<Measured>(o)) << OutcomeLine(o);
      const auto& m = std::get<Measured>(o);
      EXPECT_DOUBLE_EQ(m.time_ms.median, rec["outcome"]["time_ms"]["median"].get<double>());
      EXPECT_GT(m.time_ms.median, bundle.floor_ms);
      EXPECT_TRUE(m.energy_mj_per_call.has_value());
    }
    ++judged;
  }
  EXPECT_EQ(judged, 2);  // wrong_answer.cu and 01_relu.cu reached the checks
}

TEST(Replay, TheRecordedCorrectKernelFailsUnderAStricterFloor) {
  // The same recorded samples, against a floor above the measured time, must
  // be rejected as impossible: the floor check reads real numbers.
  Json j = ReadJsonFile(testing::SourceDir() / "tests/data/gpu/eval_01_relu_faults.json");
  TaskBundle bundle = BundleFromJson(j["bundle"]);
  const Json& rec = j["records"].back();
  bundle.hard_floor_ms = 10 * rec["outcome"]["time_ms"]["median"].get<double>();
  EXPECT_TRUE(std::holds_alternative<Incorrect>(JudgeTiming(rec["timing"], bundle, VerifyPolicy{})));
}

}  // namespace
}  // namespace kopt
