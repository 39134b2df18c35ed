#include <gtest/gtest.h>

#include "core/error.h"
#include "diagnose/analysis_tool.h"
#include "diagnose/tools/tools.h"
#include "testing/paths.h"

namespace kopt {
namespace {

Thresholds Real() {
  return LoadThresholds(testing::SourceDir() / "data" / "diagnose" / "thresholds.json");
}

TEST(Thresholds, GetAndSeverity) {
  Thresholds t = Real();
  EXPECT_GT(t.Get("bank_conflicts", "max_conflicts_per_wavefront"), 0);
  EXPECT_THROW(t.Get("bank_conflicts", "no_such_key"), Error);
  EXPECT_THROW(t.Get("no_such_tool", "x"), Error);
  EXPECT_EQ(t.Severity(0.9), "critical");
  EXPECT_EQ(t.Severity(0.15), "warning");
  EXPECT_EQ(t.Severity(0.0), "info");
}

TEST(Registry, HoldsFifteenBuiltinsEachWithThresholds) {
  ToolRegistry registry = BuiltinTools();
  std::vector<std::string> names = registry.Names();
  EXPECT_GE(names.size(), 15u);
  Thresholds t = Real();
  for (const auto& n : names) {
    auto tool = registry.Make(n);
    ASSERT_NE(tool, nullptr);
    EXPECT_EQ(tool->name(), n);
    EXPECT_TRUE(t.data().contains(n)) << n << " has no entry in thresholds.json";
  }
  EXPECT_EQ(registry.Make("nope"), nullptr);
  EXPECT_THROW(registry.Register("bank_conflicts", MakeBankConflictsTool), Error);
}

TEST(Registry, DataDirIsFound) {
  EXPECT_TRUE(std::filesystem::exists(DiagnoseDataDir() / "thresholds.json"));
}

TEST(RunTools, QuietOnAnEmptyProfileAndSortedByGain) {
  Thresholds t = Real();
  AnalysisInput in;
  in.thresholds = &t;
  in.roofline.bound = BoundClass::kLatency;
  EXPECT_TRUE(RunTools(BuiltinTools(), in).empty());

  // Two flaws at once: spills (small gain) and a tiny grid (large gain).
  in.resources = KernelResources{};
  in.resources->spill_store_bytes = 40;
  in.metrics = {{metric::kWaves, 0.1}};
  auto ds = RunTools(BuiltinTools(), in);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].tool, "small_grid_tail");
  EXPECT_EQ(ds[1].tool, "register_spills");
  EXPECT_GE(ds[0].estimated_gain, ds[1].estimated_gain);
  EXPECT_EQ(ToJson(ds[0])["tool"], "small_grid_tail");
}

}  // namespace
}  // namespace kopt
