#include <gtest/gtest.h>

#include "core/json.h"
#include "diagnose/diagnose.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

const KernelFindings* Find(const DiagnosisReport& r, const std::string& part) {
  for (const auto& k : r.kernels) {
    if (k.kernel.find(part) != std::string::npos) return &k;
  }
  return nullptr;
}

bool Has(const std::vector<Diagnosis>& ds, const std::string& tool) {
  for (const auto& d : ds) {
    if (d.tool == tool) return true;
  }
  return false;
}

TEST(SameKernel, MatchesMangledDemangledAndBaseNames) {
  StaticKernel k;
  k.kernel = "_Z4axpyIfLi4EEvPT_PKS0_S0_i";
  k.demangled = "void axpy<float, 4>(float*, float const*, float, int)";
  EXPECT_TRUE(SameKernel(k.kernel, k));
  EXPECT_TRUE(SameKernel(k.demangled, k));
  EXPECT_TRUE(SameKernel("void axpy<float, 4>(float *, const float *, float, int)", k));
  EXPECT_FALSE(SameKernel("axpy<double, 2>(double*, double const*, double, int)", k));
  StaticKernel c;
  c.kernel = c.demangled = "copy_float4";
  EXPECT_TRUE(SameKernel("copy_float4", c));
}

// The hand-written ncu fixture with the real SASS fixture.
TEST(DiagnoseProfile, FixturesEndToEnd) {
  fs::path root = testing::SourceDir();
  NcuReport ncu = ParseNcuCsv(ReadTextFile(root / "tests/data/ncu/raw_page.csv"));
  StaticReport sr = MergeStatic({}, ParseSass(ReadTextFile(root / "tests/data/sass/kernels_sm90.sass")));
  ProfileContext ctx;
  ctx.device.sm_count = 132;
  ctx.ceilings.bandwidth_bytes_per_s = 4.0e12;
  ctx.ceilings.fp32_flops_per_s = 60e12;
  ctx.time_ms = 4.0;  // kernels run ~1.86 ms of it
  Thresholds t = LoadThresholds(root / "data/diagnose/thresholds.json");
  RooflineThresholds rt = LoadRooflineThresholds(root / "data/diagnose/roofline.json");
  DiagnosisReport r = DiagnoseProfile(ncu, sr, ctx, BuiltinTools(), t, rt);

  ASSERT_EQ(r.kernels.size(), 4u);
  EXPECT_EQ(r.kernels[0].kernel, "ampere_sgemm_128x64_nn");  // the most time first

  const KernelFindings* copy = Find(r, "copy_float4");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->roofline.bound, BoundClass::kMemoryDram);
  EXPECT_TRUE(Has(copy->diagnoses, "dram_at_roof"));
  EXPECT_FALSE(Has(copy->diagnoses, "narrow_loads"));        // SASS: LDG.E.128
  EXPECT_FALSE(Has(copy->diagnoses, "uncoalesced_global"));  // 16 sectors for 16-byte loads

  const KernelFindings* transpose = Find(r, "transpose_naive");
  ASSERT_NE(transpose, nullptr);
  EXPECT_EQ(transpose->roofline.bound, BoundClass::kLatency);
  EXPECT_TRUE(Has(transpose->diagnoses, "uncoalesced_global"));

  const KernelFindings* reduce = Find(r, "smem_reduce");
  ASSERT_NE(reduce, nullptr);
  EXPECT_TRUE(Has(reduce->diagnoses, "bank_conflicts"));

  EXPECT_EQ(r.call.bound, BoundClass::kLaunchHost);
  EXPECT_TRUE(Has(r.call_diagnoses, "host_overhead"));
  for (const auto& d : r.call_diagnoses) {
    EXPECT_TRUE(d.tool == "host_overhead" || d.tool == "many_small_kernels") << d.tool;
  }
  Json j = ToJson(r);
  EXPECT_EQ(j["kernels"].size(), 4u);
}

TEST(DiagnoseProfile, NoProfileIsANote) {
  Thresholds t = LoadThresholds(testing::SourceDir() / "data/diagnose/thresholds.json");
  DiagnosisReport r = DiagnoseProfile(ParseNcuCsv(""), StaticReport{}, ProfileContext{}, BuiltinTools(),
                                      t, RooflineThresholds{});
  EXPECT_TRUE(r.kernels.empty());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_TRUE(r.call_diagnoses.empty());
}

}  // namespace
}  // namespace kopt
