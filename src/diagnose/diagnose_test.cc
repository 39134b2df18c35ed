#include <gtest/gtest.h>
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "core/json.h"
#include "diagnose/diagnose.h"
#include "diagnose/tiers.h"
#include "profile/metrics.h"
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

// The ncu recording of tests/data/ncu/profile_fixtures.cu on the H200 with
// the real SASS of the same kernels (tests/data/sass/kernels_sm90.sass),
// diagnosed as one call.
DiagnosisReport FixtureReport(const Thresholds& t) {
  fs::path root = testing::SourceDir();
  NcuReport ncu = ParseNcuCsv(ReadTextFile(root / "tests/data/ncu/h200_raw_page.csv"));
  StaticReport sr =
      MergeStatic({}, ParseSass(ReadTextFile(root / "tests/data/sass/kernels_sm90.sass")));
  ProfileContext ctx;
  ctx.device.sm_count = 132;
  ctx.ceilings.bandwidth_bytes_per_s = 4.0e12;
  ctx.ceilings.fp32_flops_per_s = 60e12;
  RooflineThresholds rt = LoadRooflineThresholds(root / "data/diagnose/roofline.json");
  return DiagnoseProfile(ncu, sr, ctx, BuiltinTools(), t, rt);
}

TEST(DiagnoseProfile, FixturesEndToEnd) {
  Thresholds t = LoadThresholds(testing::SourceDir() / "data/diagnose/thresholds.json");
  DiagnosisReport r = FixtureReport(t);
  for (const auto& k : r.kernels) {
    std::string tools;
    for (const auto& d : k.diagnoses) tools += " " + d.tool + "(" + d.severity + ")";
    std::printf("%-60.60s %-16s%s\n", k.kernel.c_str(), BoundClassName(k.roofline.bound).c_str(),
                tools.c_str());
  }
  ASSERT_EQ(r.kernels.size(), 9u);  // copy_scalar's two launches are one kernel
  EXPECT_EQ(r.kernels[0].kernel.substr(0, 14), "register_spill");  // the most time first

  const KernelFindings* copy = Find(r, "copy_float4");
  ASSERT_NE(copy, nullptr);
  EXPECT_TRUE(IsMemoryBound(copy->roofline.bound));
  EXPECT_FALSE(Has(copy->diagnoses, "narrow_loads"));        // SASS: LDG.E.128
  EXPECT_FALSE(Has(copy->diagnoses, "uncoalesced_global"));  // 16 sectors for 16-byte loads
  EXPECT_FALSE(Has(copy->diagnoses, "bank_conflicts"));

  const KernelFindings* transpose = Find(r, "transpose_naive");
  ASSERT_NE(transpose, nullptr);
  EXPECT_TRUE(Has(transpose->diagnoses, "uncoalesced_global"));

  const KernelFindings* column = Find(r, "smem_column_read");
  ASSERT_NE(column, nullptr);
  EXPECT_TRUE(Has(column->diagnoses, "bank_conflicts"));

  const KernelFindings* spill = Find(r, "register_spill");
  ASSERT_NE(spill, nullptr);
  EXPECT_TRUE(Has(spill->diagnoses, "register_spills"));

  const KernelFindings* scalar = Find(r, "copy_scalar");
  ASSERT_NE(scalar, nullptr);
  EXPECT_TRUE(Has(scalar->diagnoses, "narrow_loads"));

  const KernelFindings* wmma = Find(r, "wmma_tile");  // one block of 32 threads
  ASSERT_NE(wmma, nullptr);
  EXPECT_EQ(wmma->roofline.bound, BoundClass::kSmallGrid);
  EXPECT_TRUE(Has(wmma->diagnoses, "small_grid_tail"));

  EXPECT_EQ(copy->roofline.bound, BoundClass::kMemoryDram);     // DRAM 75%, L2 90%: DRAM's traffic
  EXPECT_EQ(transpose->roofline.bound, BoundClass::kMemoryL2);  // DRAM 10%, L2 84%
  EXPECT_EQ(column->roofline.bound, BoundClass::kMemoryL1Shared);
  for (const auto& k : r.kernels) {  // streaming stalls are the roof, not a finding
    if (IsMemoryBound(k.roofline.bound) && k.roofline.bound != BoundClass::kMemoryL1Shared) {
      EXPECT_FALSE(Has(k.diagnoses, "warp_stalls")) << k.kernel;
    }
    EXPECT_FALSE(Has(k.diagnoses, "warp_divergence")) << k.kernel;  // none diverges
  }
  Json j = ToJson(r);
  EXPECT_EQ(j["kernels"].size(), 9u);
}

// Findings are ranked by what they could save of the whole call: a kernel's
// gain times its share of the call's time, and severity follows that (the
// nine fixture kernels as one call, each a fraction of it).
TEST(DiagnoseProfile, GainsAreSharesOfTheWholeCall) {
  Thresholds t = LoadThresholds(testing::SourceDir() / "data/diagnose/thresholds.json");
  DiagnosisReport r = FixtureReport(t);
  double total_ms = 0;
  for (const auto& k : r.kernels) total_ms += k.mean_ms * k.launches;
  int checked = 0;
  for (const auto& k : r.kernels) {
    double share = k.mean_ms * k.launches / total_ms;
    for (const auto& d : k.diagnoses) {
      EXPECT_EQ(d.kernel, k.kernel);
      ASSERT_TRUE(d.call_gain) << d.tool;
      EXPECT_NEAR(*d.call_gain, d.estimated_gain * share, 1e-9) << d.tool << " on " << k.kernel;
      EXPECT_EQ(d.severity, t.Severity(*d.call_gain)) << d.tool;
      ++checked;
    }
  }
  ASSERT_GT(checked, 3);
  std::vector<Diagnosis> ranked = RankedDiagnoses(r);
  ASSERT_EQ(static_cast<int>(ranked.size()), checked + static_cast<int>(r.call_diagnoses.size()));
  for (size_t i = 1; i < ranked.size(); ++i)
    EXPECT_GE(ranked[i - 1].CallGain(), ranked[i].CallGain());
  // A kernel's large gain on a small share of the call is not critical.
  const KernelFindings* small = nullptr;
  for (const auto& k : r.kernels)
    if (k.mean_ms * k.launches / total_ms < 0.05 && !k.diagnoses.empty()) small = &k;
  ASSERT_NE(small, nullptr);
  for (const auto& d : small->diagnoses) EXPECT_NE(d.severity, "critical") << d.tool;
  // The JSON carries both numbers, and reads back.
  Diagnosis back = DiagnosisFromJson(ToJson(ranked.front()));
  EXPECT_EQ(back.kernel, ranked.front().kernel);
  ASSERT_TRUE(back.call_gain);
  EXPECT_DOUBLE_EQ(*back.call_gain, *ranked.front().call_gain);
}

// A call far from its floor always gets a finding, even when no tool fires:
// here a kernel at 10x the floor with nothing near its peak (tier 1 only).
TEST(DiagnoseProfile, ACallFarFromItsFloorIsAlwaysDiagnosed) {
  fs::path root = testing::SourceDir();
  Thresholds t = LoadThresholds(root / "data/diagnose/thresholds.json");
  RooflineThresholds rt = LoadRooflineThresholds(root / "data/diagnose/roofline.json");
  auto diagnose = [&](double time_ms) {
    NcuReport ncu;
    NcuKernel k;
    k.name = "max_pool_forward(float const*, float*)";
    k.metrics[metric::kDuration] = time_ms * 1e6;
    k.metrics[metric::kSmThroughputPct] = 14;
    k.metrics[metric::kDramThroughputPct] = 9;
    k.metrics[metric::kL2ThroughputPct] = 11;
    k.metrics[metric::kL1ThroughputPct] = 18;
    k.metrics[metric::kAchievedOccupancyPct] = 31;
    k.metrics[metric::kDramBytes] = 4.4e8;
    ncu.kernels.push_back(k);
    ProfileContext ctx;
    ctx.device.sm_count = 132;
    ctx.ceilings.bandwidth_bytes_per_s = 4.0e12;
    ctx.ceilings.fp32_flops_per_s = 60e12;
    ctx.time_ms = time_ms;
    ctx.min_bytes = 4.0e8;  // 0.1 ms at 4 TB/s
    return DiagnoseProfile(ncu, StaticReport{}, ctx, BuiltinTools(), t, rt);
  };
  DiagnosisReport far = diagnose(1.0);
  ASSERT_NEAR(far.call.headroom, 10, 0.5);
  std::vector<Diagnosis> ranked = RankedDiagnoses(far);
  ASSERT_FALSE(ranked.empty());
  const Diagnosis& d = ranked.front();
  EXPECT_EQ(d.tool, "far_from_floor");
  EXPECT_NEAR(d.CallGain(), 0.5 * (1 - 1 / far.call.headroom), 1e-9);  // half the gap to the floor
  EXPECT_EQ(d.severity, "critical");
  EXPECT_NE(d.advice.find("takes 10.0x its floor"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("warps fill 31% of the slots"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("latency-bound"), std::string::npos) << d.advice;
  EXPECT_EQ(d.suggested_moves.front(), "increase_memory_level_parallelism");
  // Near its floor, nothing is said for it.
  for (const auto& x : RankedDiagnoses(diagnose(0.15))) EXPECT_NE(x.tool, "far_from_floor");
}

// A call of several bandwidth-bound kernels that round-trip intermediates
// through DRAM: the call-level finding names the fusion and the bytes it saves,
// and ranks above the kernels' own findings.
TEST(DiagnoseProfile, ExcessTrafficAcrossKernelsNamesTheFusion) {
  fs::path root = testing::SourceDir();
  Thresholds t = LoadThresholds(root / "data/diagnose/thresholds.json");
  RooflineThresholds rt = LoadRooflineThresholds(root / "data/diagnose/roofline.json");
  auto call = [&](int kernels) {
    NcuReport ncu;
    for (int i = 0; i < kernels; ++i) {
      NcuKernel k;
      k.name = fmt::format("layernorm_pass{}(float const*, float*)", i);
      k.metrics[metric::kDuration] = 0.12e6;  // 0.12 ms
      k.metrics[metric::kDramBytes] = 4.0e8;  // 400 MB: 3.3 TB/s
      k.metrics[metric::kDramThroughputPct] = 85;
      k.metrics[metric::kL2ThroughputPct] = 60;
      k.metrics[metric::kSmThroughputPct] = 20;
      k.metrics[metric::kL2HitRatePct] = 3;  // streaming
      ncu.kernels.push_back(k);
    }
    ProfileContext ctx;
    ctx.device.sm_count = 132;
    ctx.ceilings.bandwidth_bytes_per_s = 4.0e12;
    ctx.ceilings.fp32_flops_per_s = 60e12;
    ctx.time_ms = 0.12 * kernels;
    ctx.min_bytes = 4.0e8;
    return DiagnoseProfile(ncu, StaticReport{}, ctx, BuiltinTools(), t, rt);
  };
  DiagnosisReport three = call(3);
  std::vector<Diagnosis> ranked = RankedDiagnoses(three);
  ASSERT_FALSE(ranked.empty());
  const Diagnosis& d = ranked.front();
  EXPECT_EQ(d.tool, "excess_traffic");
  EXPECT_NEAR(d.CallGain(), 2.0 / 3, 0.02);  // all memory-bound, 3x the bytes
  EXPECT_NE(d.advice.find("moves 3.0x the bytes the task needs"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("layernorm_pass0 (400 MB)"), std::string::npos) << d.advice;
  EXPECT_NE(d.advice.find("saving about 800 MB per call"), std::string::npos) << d.advice;
  // No kernel of several claims to be at its floor, or to re-read data,
  // without the bytes the task needs to compare against.
  for (const auto& x : ranked) {
    EXPECT_NE(x.tool, "poor_l2_reuse") << x.advice;
    EXPECT_EQ(x.advice.find("moving about what the task needs"), std::string::npos) << x.advice;
  }
  // One kernel moving what the task needs: nothing to fuse.
  for (const auto& x : RankedDiagnoses(call(1))) EXPECT_NE(x.tool, "excess_traffic");
}

// Kernels that wait on memory latency (DRAM at 50%, so not classified
// memory-bound) still pay for the excess bytes they move: the gain is at
// least those bytes' time at the measured bandwidth (the zoo's nine-kernel
// LayerNorm got 20% from the memory-bound share alone, at 5.9x the bytes).
TEST(DiagnoseProfile, ExcessTrafficGainCountsTheExcessBytesAtTheMeasuredBandwidth) {
  fs::path root = testing::SourceDir();
  Thresholds t = LoadThresholds(root / "data/diagnose/thresholds.json");
  RooflineThresholds rt = LoadRooflineThresholds(root / "data/diagnose/roofline.json");
  NcuReport ncu;
  for (int i = 0; i < 3; ++i) {
    NcuKernel k;
    k.name = fmt::format("norm_step{}(float const*, float*)", i);
    k.metrics[metric::kDuration] = 0.2e6;   // 0.2 ms
    k.metrics[metric::kDramBytes] = 4.0e8;  // 400 MB: 2 TB/s, half the roof
    k.metrics[metric::kDramThroughputPct] = 50;
    k.metrics[metric::kL2ThroughputPct] = 35;
    k.metrics[metric::kSmThroughputPct] = 15;
    ncu.kernels.push_back(k);
  }
  ProfileContext ctx;
  ctx.device.sm_count = 132;
  ctx.ceilings.bandwidth_bytes_per_s = 4.0e12;
  ctx.ceilings.fp32_flops_per_s = 60e12;
  ctx.time_ms = 0.6;
  ctx.min_bytes = 4.0e8;
  DiagnosisReport r = DiagnoseProfile(ncu, StaticReport{}, ctx, BuiltinTools(), t, rt);
  std::optional<Diagnosis> excess;
  for (const auto& d : r.call_diagnoses)
    if (d.tool == "excess_traffic") excess = d;
  ASSERT_TRUE(excess);
  for (const auto& k : r.kernels) EXPECT_FALSE(IsMemoryBound(k.roofline.bound)) << k.kernel;
  // 800 MB of excess at 4 TB/s is 0.2 ms of the 0.6 ms call.
  EXPECT_NEAR(excess->CallGain(), 1.0 / 3, 0.01);
}

// A convolution with its bias and ReLU as separate elementwise launches and
// layout conversions around it: the fusion named is the convolution's
// epilogue, and channels-last instead of converting.
TEST(DiagnoseProfile, ExcessTrafficAroundALibraryKernelNamesItsEpilogueAndChannelsLast) {
  fs::path root = testing::SourceDir();
  Thresholds t = LoadThresholds(root / "data/diagnose/thresholds.json");
  RooflineThresholds rt = LoadRooflineThresholds(root / "data/diagnose/roofline.json");
  NcuReport ncu;
  for (const char* name :
       {"void cudnn::nchwToNhwcKernel<float, float, float>(cudnn::nchw2nhwc_params_t<float>)",
        "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc(Params)",
        "void cudnn::nhwcToNchwKernel<float, float, float>(cudnn::nhwc2nchw_params_t<float>)",
        "void at::elementwise_kernel<128, 2, add>(int, T3)",
        "void at::vectorized_elementwise_kernel<4, clamp>(int, T2, T3)"}) {
    NcuKernel k;
    k.name = name;
    k.metrics[metric::kDuration] = 0.1e6;
    k.metrics[metric::kDramBytes] = 3.0e8;
    k.metrics[metric::kDramThroughputPct] = 75;
    k.metrics[metric::kSmThroughputPct] = 20;
    ncu.kernels.push_back(k);
  }
  ProfileContext ctx;
  ctx.device.sm_count = 132;
  ctx.ceilings.bandwidth_bytes_per_s = 4.0e12;
  ctx.ceilings.fp32_flops_per_s = 60e12;
  ctx.time_ms = 0.5;
  ctx.min_bytes = 3.0e8;
  DiagnosisReport r = DiagnoseProfile(ncu, StaticReport{}, ctx, BuiltinTools(), t, rt);
  std::optional<Diagnosis> excess;
  for (const auto& d : r.call_diagnoses)
    if (d.tool == "excess_traffic") excess = d;
  ASSERT_TRUE(excess);
  EXPECT_NE(excess->advice.find("2 elementwise launch(es) around sm90_xmma_fprop"),
            std::string::npos)
      << excess->advice;
  EXPECT_NE(excess->advice.find("epilogue"), std::string::npos) << excess->advice;
  EXPECT_NE(excess->advice.find("2 launch(es) convert between NCHW and NHWC"), std::string::npos)
      << excess->advice;
  EXPECT_NE(
      std::find(excess->suggested_moves.begin(), excess->suggested_moves.end(), "channels_last"),
      excess->suggested_moves.end());
}

TEST(Tiers, EveryMetricIsOneKoptAsksForAndTier2AddsOnlyNewOnes) {
  TierMetrics t = LoadTierMetrics(testing::SourceDir() / "data/diagnose/tiers.json");
  const auto& known = KoptNcuMetrics();
  auto is_known = [&](const std::string& m) {
    return std::find(known.begin(), known.end(), m) != known.end();
  };
  for (const auto& m : t.tier1) EXPECT_TRUE(is_known(m)) << m;
  for (const auto& [cls, list] : t.tier2)
    for (const auto& m : list) EXPECT_TRUE(is_known(m)) << cls << ": " << m;
  std::vector<std::string> two = Tier2Metrics(t, {BoundClass::kLatency, BoundClass::kMemoryDram});
  EXPECT_FALSE(two.empty());
  for (const auto& m : two) {
    EXPECT_EQ(std::count(two.begin(), two.end(), m), 1) << m;
    EXPECT_EQ(std::count(t.tier1.begin(), t.tier1.end(), m), 0) << m;
  }
  // Tier 1 plus every class's tier 2 covers all that the tools read.
  std::set<BoundClass> all = {BoundClass::kMemoryDram,     BoundClass::kMemoryL2,
                              BoundClass::kMemoryL1Shared, BoundClass::kComputeFp32,
                              BoundClass::kComputeTensor,  BoundClass::kLatency,
                              BoundClass::kSmallGrid,      BoundClass::kLaunchHost};
  std::vector<std::string> every = Tier2Metrics(t, all);
  every.insert(every.end(), t.tier1.begin(), t.tier1.end());
  for (const auto& m : known) EXPECT_EQ(std::count(every.begin(), every.end(), m), 1) << m;
}

TEST(Tiers, MergeMatchesLaunchesByNameAndOrder) {
  fs::path root = testing::SourceDir();
  NcuReport full = ParseNcuCsv(ReadTextFile(root / "tests/data/ncu/h200_raw_page.csv"));
  NcuReport base = full, extra = full;
  for (auto& k : base.kernels) k.metrics = {{metric::kDuration, k.metrics.at(metric::kDuration)}};
  for (auto& k : extra.kernels) k.metrics.erase(metric::kDuration);
  // Other kernels' order must not matter (copy_scalar's two launches keep theirs).
  std::stable_partition(extra.kernels.begin(), extra.kernels.end(), [](const NcuKernel& k) {
    return k.name.find("copy_float4") == std::string::npos;
  });
  MergeNcuReports(&base, extra);
  ASSERT_EQ(base.kernels.size(), full.kernels.size());
  for (size_t i = 0; i < full.kernels.size(); ++i)
    EXPECT_EQ(base.kernels[i].metrics, full.kernels[i].metrics) << i;
}

TEST(DiagnoseProfile, NoProfileIsANote) {
  Thresholds t = LoadThresholds(testing::SourceDir() / "data/diagnose/thresholds.json");
  DiagnosisReport r = DiagnoseProfile(ParseNcuCsv(""), StaticReport{}, ProfileContext{},
                                      BuiltinTools(), t, RooflineThresholds{});
  EXPECT_TRUE(r.kernels.empty());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_TRUE(r.call_diagnoses.empty());
}

}  // namespace
}  // namespace kopt
