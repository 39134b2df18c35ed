// Each tool fires on a synthetic profile with its flaw and stays quiet on a good one.
#include <gtest/gtest.h>

#include "diagnose/analysis_tool.h"
#include "diagnose/tools/tools.h"
#include "testing/paths.h"

namespace kopt {
namespace {

const Thresholds& Real() {
  static const Thresholds t =
      LoadThresholds(testing::SourceDir() / "data" / "diagnose" / "thresholds.json");
  return t;
}

AnalysisInput Input(BoundClass bound, Metrics metrics = {}) {
  AnalysisInput in;
  in.kernel = "k";
  in.thresholds = &Real();
  in.roofline.bound = bound;
  in.metrics = std::move(metrics);
  in.device.sm_count = 132;
  return in;
}

SassFunction Sass(InstructionMix mix) {
  SassFunction f;
  f.name = "k";
  f.mix = std::move(mix);
  return f;
}

std::string Stall(const std::string& reason) {
  return std::string(metric::kStallPrefix) + reason + metric::kStallSuffix;
}

void ExpectWellFormed(const std::optional<Diagnosis>& d, const std::string& tool) {
  ASSERT_TRUE(d.has_value()) << tool << " stayed quiet on its flaw";
  EXPECT_EQ(d->tool, tool);
  EXPECT_FALSE(d->advice.empty());
  EXPECT_FALSE(d->evidence.empty());
  EXPECT_FALSE(d->suggested_moves.empty());
  EXPECT_GE(d->estimated_gain, 0);
  EXPECT_LE(d->estimated_gain, 1);
  EXPECT_TRUE(d->severity == "info" || d->severity == "warning" || d->severity == "critical");
}

// --- uncoalesced_global ------------------------------------------------------

TEST(UncoalescedGlobal, FiresOnStridedLoads) {
  auto tool = MakeUncoalescedGlobalTool();
  EXPECT_TRUE(tool->AppliesTo(BoundClass::kMemoryDram));
  auto d = tool->Run(Input(BoundClass::kMemoryDram,
                           {{metric::kGlobalLdSectors, 32e6}, {metric::kGlobalLdRequests, 1e6}}));
  ExpectWellFormed(d, "uncoalesced_global");
  EXPECT_EQ(d->evidence.at("sectors_per_request"), 32);
  EXPECT_GE(d->estimated_gain, 0.5);  // without SASS the ideal is taken as 16 (float4)
  // With the SASS saying 32-bit loads, the ideal is 4 sectors: a larger gain.
  InstructionMix mix;
  mix.global_loads.by_bits[32] = 2;
  AnalysisInput in = Input(BoundClass::kMemoryDram,
                           {{metric::kGlobalLdSectors, 32e6}, {metric::kGlobalLdRequests, 1e6}});
  in.sass = Sass(mix);
  auto narrow = tool->Run(in);
  ExpectWellFormed(narrow, "uncoalesced_global");
  EXPECT_EQ(narrow->evidence.at("ideal_sectors_per_request"), 4);
  EXPECT_GT(narrow->estimated_gain, 0.5);
}

TEST(UncoalescedGlobal, WithoutSassSixteenSectorsMayBeCoalescedFloat4) {
  // A float4 copy without its SASS (ncu recording on the H200: 16 sectors
  // per request) must not be called uncoalesced.
  EXPECT_FALSE(MakeUncoalescedGlobalTool()->Run(
      Input(BoundClass::kMemoryDram,
            {{metric::kGlobalLdSectors, 2097152}, {metric::kGlobalLdRequests, 131072}})));
}

TEST(UncoalescedGlobal, AFloat4KernelWithAScalarTailIsJudgedByItsWidestAccess) {
  // The shipped ReLU on the H200: one LDG.128 for the body and one LDG.32 for
  // the tail; 16 sectors per request is the float4 body, coalesced.
  InstructionMix mix;
  mix.global_loads.by_bits[32] = 1;
  mix.global_loads.by_bits[128] = 1;
  mix.global_stores.by_bits[32] = 1;
  mix.global_stores.by_bits[128] = 1;
  AnalysisInput in = Input(BoundClass::kMemoryDram, {{metric::kGlobalLdSectors, 16e6},
                                                     {metric::kGlobalLdRequests, 1e6},
                                                     {metric::kGlobalStSectors, 16e6},
                                                     {metric::kGlobalStRequests, 1e6}});
  in.sass = Sass(mix);
  EXPECT_FALSE(MakeUncoalescedGlobalTool()->Run(in));
}

TEST(UncoalescedGlobal, QuietOnCoalescedFloat4) {
  auto tool = MakeUncoalescedGlobalTool();
  InstructionMix mix;
  mix.global_loads.by_bits[128] = 4;
  AnalysisInput in = Input(BoundClass::kMemoryDram,
                           {{metric::kGlobalLdSectors, 16e6}, {metric::kGlobalLdRequests, 1e6}});
  in.sass = Sass(mix);  // 16-byte loads: 16 sectors per request is ideal
  EXPECT_FALSE(tool->Run(in));
  EXPECT_FALSE(tool->Run(Input(BoundClass::kMemoryDram, {{metric::kGlobalLdSectors, 4e6},
                                                         {metric::kGlobalLdRequests, 1e6}})));
  EXPECT_FALSE(tool->Run(Input(BoundClass::kMemoryDram)));
}

// --- bank_conflicts ----------------------------------------------------------

TEST(BankConflicts, FiresOnConflictingTile) {
  auto d = MakeBankConflictsTool()->Run(
      Input(BoundClass::kMemoryL1Shared,
            {{metric::kSharedLdConflicts, 3.9e6}, {metric::kSharedLdWavefronts, 4.2e6}}));
  ExpectWellFormed(d, "bank_conflicts");
  EXPECT_NEAR(d->evidence.at("conflicts_per_wavefront"), 3.9 / 4.2, 1e-9);
}

TEST(BankConflicts, QuietOnPaddedTile) {
  EXPECT_FALSE(MakeBankConflictsTool()->Run(
      Input(BoundClass::kMemoryL1Shared, {{metric::kSharedLdConflicts, 1000},
                                          {metric::kSharedLdWavefronts, 4.2e6},
                                          {metric::kSharedStConflicts, 0},
                                          {metric::kSharedStWavefronts, 1e6}})));
}

// --- narrow_loads ------------------------------------------------------------

TEST(NarrowLoads, FiresOnScalarLoads) {
  InstructionMix mix;
  mix.global_loads.by_bits[32] = 8;
  mix.global_stores.by_bits[32] = 2;
  AnalysisInput in = Input(BoundClass::kMemoryDram);
  in.sass = Sass(mix);
  auto d = MakeNarrowLoadsTool()->Run(in);
  ExpectWellFormed(d, "narrow_loads");
  EXPECT_EQ(d->evidence.at("sass_ldg_32bit"), 8);
}

TEST(NarrowLoads, QuietOnFloat4AndWithoutSass) {
  InstructionMix mix;
  mix.global_loads.by_bits[128] = 4;
  mix.global_stores.by_bits[128] = 1;
  mix.global_loads.by_bits[32] = 1;  // the scalar tail
  AnalysisInput in = Input(BoundClass::kMemoryDram);
  in.sass = Sass(mix);
  EXPECT_FALSE(MakeNarrowLoadsTool()->Run(in));
  EXPECT_FALSE(MakeNarrowLoadsTool()->Run(Input(BoundClass::kMemoryDram)));
}

// --- register_spills ---------------------------------------------------------

TEST(RegisterSpills, FiresOnPtxasSpills) {
  AnalysisInput in = Input(BoundClass::kComputeFp32);
  in.resources = KernelResources{};
  in.resources->spill_store_bytes = 420;
  in.resources->spill_load_bytes = 676;
  in.resources->registers = 32;
  auto d = MakeRegisterSpillsTool()->Run(in);
  ExpectWellFormed(d, "register_spills");
  EXPECT_EQ(d->evidence.at("ptxas_spill_store_bytes"), 420);
}

TEST(RegisterSpills, FiresOnLocalMemoryTraffic) {
  auto d = MakeRegisterSpillsTool()->Run(Input(
      BoundClass::kLatency, {{metric::kLocalLdSectors, 5e6}, {metric::kGlobalLdSectors, 5e6}}));
  ExpectWellFormed(d, "register_spills");
}

TEST(RegisterSpills, QuietWithoutSpills) {
  AnalysisInput in = Input(BoundClass::kComputeFp32, {{metric::kGlobalLdSectors, 5e6}});
  in.resources = KernelResources{};
  in.resources->registers = 40;
  EXPECT_FALSE(MakeRegisterSpillsTool()->Run(in));
}

// --- occupancy_limiter -------------------------------------------------------

TEST(OccupancyLimiter, FiresAndNamesRegisters) {
  auto d = MakeOccupancyLimiterTool()->Run(
      Input(BoundClass::kLatency, {{metric::kAchievedOccupancyPct, 18},
                                   {metric::kOccLimitRegisters, 1},
                                   {metric::kOccLimitSharedMem, 3},
                                   {metric::kOccLimitWarps, 8},
                                   {metric::kRegistersPerThread, 200}}));
  ExpectWellFormed(d, "occupancy_limiter");
  EXPECT_NE(d->advice.find("registers"), std::string::npos);
  EXPECT_EQ(d->suggested_moves[0], "adjust_launch_bounds");
}

TEST(OccupancyLimiter, QuietAtGoodOccupancyAndOnComputeBound) {
  auto tool = MakeOccupancyLimiterTool();
  EXPECT_FALSE(tool->Run(Input(BoundClass::kLatency, {{metric::kAchievedOccupancyPct, 85}})));
  EXPECT_FALSE(tool->AppliesTo(BoundClass::kComputeTensor));
}

TEST(OccupancyLimiter, QuietWhenWarpsDoNotWaitOnMemory) {
  // The H200 recording of a tiled WMMA GEMM: 24% occupancy by design, long
  // scoreboard 12% of the stall cycles. A shared-memory hog at 12% occupancy
  // stalled 66% on long scoreboard and is reported.
  Metrics gemm = {{metric::kAchievedOccupancyPct, 23.8},
                  {metric::kOccLimitRegisters, 2},
                  {metric::kOccLimitSharedMem, 2},
                  {Stall("long_scoreboard"), 1.64},
                  {Stall("short_scoreboard"), 3.33},
                  {Stall("math_pipe_throttle"), 2.17},
                  {Stall("wait"), 2.34},
                  {Stall("barrier"), 1.97},
                  {Stall("dispatch_stall"), 0.81},
                  {Stall("mio_throttle"), 0.94}};
  EXPECT_FALSE(MakeOccupancyLimiterTool()->Run(Input(BoundClass::kMemoryL2, gemm)));
  Metrics hog = {{metric::kAchievedOccupancyPct, 12.3}, {metric::kOccLimitSharedMem, 1},
                 {Stall("long_scoreboard"), 27.5},      {Stall("barrier"), 6.4},
                 {Stall("short_scoreboard"), 3.8},      {Stall("wait"), 1.9}};
  auto d = MakeOccupancyLimiterTool()->Run(Input(BoundClass::kLatency, hog));
  ExpectWellFormed(d, "occupancy_limiter");
  EXPECT_NEAR(d->evidence.at("long_scoreboard_share"), 27.5 / 39.6, 1e-9);
}

// --- small_grid_tail ---------------------------------------------------------

TEST(SmallGridTail, FiresOnAFractionOfAWave) {
  auto d = MakeSmallGridTailTool()->Run(
      Input(BoundClass::kSmallGrid, {{metric::kWaves, 0.12}, {metric::kGridSize, 16}}));
  ExpectWellFormed(d, "small_grid_tail");
  EXPECT_NEAR(d->estimated_gain, 0.88, 1e-9);
}

TEST(SmallGridTail, FiresOnAnEmptyLastWave) {
  auto d = MakeSmallGridTailTool()->Run(Input(BoundClass::kLatency, {{metric::kWaves, 1.1}}));
  ExpectWellFormed(d, "small_grid_tail");
  EXPECT_NEAR(d->evidence.at("tail_efficiency"), 0.55, 1e-9);
}

TEST(SmallGridTail, QuietOnFullWaves) {
  auto tool = MakeSmallGridTailTool();
  EXPECT_FALSE(tool->Run(Input(BoundClass::kMemoryDram, {{metric::kWaves, 3.97}})));
  EXPECT_FALSE(tool->Run(Input(BoundClass::kMemoryDram, {{metric::kWaves, 40.2}})));
}

// --- dram_at_roof ------------------------------------------------------------

TEST(DramAtRoof, FiresWithExcessBytes) {
  AnalysisInput in = Input(BoundClass::kMemoryDram,
                           {{metric::kDramThroughputPct, 91}, {metric::kDramBytes, 1.2e9}});
  in.min_bytes = 0.4e9;
  auto d = MakeDramAtRoofTool()->Run(in);
  ExpectWellFormed(d, "dram_at_roof");
  EXPECT_NEAR(d->estimated_gain, 2.0 / 3, 1e-9);
  EXPECT_EQ(d->severity, "critical");
}

TEST(DramAtRoof, AtTheFloorIsInfoAndQuietBelowTheRoof) {
  AnalysisInput at = Input(BoundClass::kMemoryDram,
                           {{metric::kDramThroughputPct, 92}, {metric::kDramBytes, 0.41e9}});
  at.min_bytes = 0.4e9;
  auto d = MakeDramAtRoofTool()->Run(at);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, "info");
  EXPECT_EQ(d->estimated_gain, 0);
  EXPECT_FALSE(MakeDramAtRoofTool()->Run(
      Input(BoundClass::kMemoryDram, {{metric::kDramThroughputPct, 45}})));
}

// --- poor_l2_reuse -----------------------------------------------------------

TEST(PoorL2Reuse, FiresOnRereads) {
  AnalysisInput in =
      Input(BoundClass::kMemoryDram, {{metric::kL2HitRatePct, 12}, {metric::kDramBytes, 4e9}});
  in.min_bytes = 1e9;
  auto d = MakePoorL2ReuseTool()->Run(in);
  ExpectWellFormed(d, "poor_l2_reuse");
  EXPECT_EQ(d->evidence.at("dram_over_min_bytes"), 4);
}

TEST(PoorL2Reuse, QuietOnAStreamingKernel) {
  // A copy has a low hit rate by nature but reads each byte once.
  AnalysisInput in =
      Input(BoundClass::kMemoryDram, {{metric::kL2HitRatePct, 0.1}, {metric::kDramBytes, 1.05e9}});
  in.min_bytes = 1e9;
  EXPECT_FALSE(MakePoorL2ReuseTool()->Run(in));
  EXPECT_FALSE(
      MakePoorL2ReuseTool()->Run(Input(BoundClass::kMemoryDram, {{metric::kL2HitRatePct, 80}})));
}

// --- warp_stalls -------------------------------------------------------------

TEST(WarpStalls, FiresOnLongScoreboard) {
  auto d = MakeWarpStallsTool()->Run(Input(BoundClass::kLatency, {{Stall("long_scoreboard"), 31.4},
                                                                  {Stall("wait"), 2.1},
                                                                  {Stall("barrier"), 1.0},
                                                                  {Stall("not_selected"), 40}}));
  ExpectWellFormed(d, "warp_stalls");
  EXPECT_NE(d->advice.find("long_scoreboard"), std::string::npos);
  EXPECT_EQ(d->suggested_moves[0], "software_pipelining");
}

TEST(WarpStalls, ReadsPcSamplingCounts) {
  auto d = MakeWarpStallsTool()->Run(
      Input(BoundClass::kLatency, {{std::string(metric::kPcSampStallPrefix) + "barrier", 700},
                                   {std::string(metric::kPcSampStallPrefix) + "wait", 100}}));
  ExpectWellFormed(d, "warp_stalls");
  EXPECT_EQ(d->suggested_moves[0], "warp_shuffle_reduction");
}

TEST(WarpStalls, QuietWhenStallsAreSpreadOrSmall) {
  auto tool = MakeWarpStallsTool();
  EXPECT_FALSE(tool->Run(Input(BoundClass::kLatency, {{Stall("long_scoreboard"), 2},
                                                      {Stall("wait"), 2},
                                                      {Stall("barrier"), 2},
                                                      {Stall("mio_throttle"), 2}})));
  EXPECT_FALSE(tool->Run(
      Input(BoundClass::kLatency, {{Stall("long_scoreboard"), 1.5}, {Stall("wait"), 0.2}})));
}

TEST(WarpStalls, UnderAMemoryRoofOnlyReasonsTheRoofDoesNotExplain) {
  // The H200's fenced float4 copy: DRAM at 80%, membar 40% of stall cycles.
  Metrics fence = {{Stall("long_scoreboard"), 60.8},
                   {Stall("membar"), 45.0},
                   {Stall("wait"), 2.6},
                   {Stall("drain"), 1.3},
                   {Stall("short_scoreboard"), 1.2}};
  auto tool = MakeWarpStallsTool();
  EXPECT_TRUE(tool->AppliesTo(BoundClass::kMemoryDram));
  auto d = tool->Run(Input(BoundClass::kMemoryDram, fence));
  ExpectWellFormed(d, "warp_stalls");
  EXPECT_NE(d->advice.find("'membar'"), std::string::npos) << d->advice;
  EXPECT_EQ(d->suggested_moves[0], "remove_fences");
  // A streaming kernel waits on DRAM, and a padded shared-memory transpose at
  // its barriers: both are the roof, not a flaw.
  EXPECT_FALSE(tool->Run(
      Input(BoundClass::kMemoryDram, {{Stall("long_scoreboard"), 80}, {Stall("wait"), 1}})));
  EXPECT_FALSE(tool->Run(
      Input(BoundClass::kMemoryDram,
            {{Stall("long_scoreboard"), 40}, {Stall("barrier"), 17.3}, {Stall("wait"), 2}})));
  // Off a memory roof the same long-scoreboard wait is reported.
  EXPECT_TRUE(
      tool->Run(Input(BoundClass::kLatency, {{Stall("long_scoreboard"), 80}, {Stall("wait"), 1}})));
}

// --- slow_mma_path -------------------------------------------------------------

TEST(SlowMmaPath, FiresOnHmmaOnlyOnHopper) {
  InstructionMix mix;
  mix.tensor_mma = 64;  // HMMA from WMMA
  AnalysisInput in = Input(BoundClass::kMemoryL2, {{metric::kTensorPipePct, 49.2}});
  in.sass = Sass(mix);
  in.device.cc_major = 9;
  in.roofline.headroom = 4;
  auto d = MakeSlowMmaPathTool()->Run(in);
  ExpectWellFormed(d, "slow_mma_path");
  EXPECT_NEAR(d->estimated_gain, 0.5, 1e-9);  // 1 - 1/4, capped at max_gain 0.5
  EXPECT_NE(d->advice.find("wgmma"), std::string::npos);
  in.roofline.headroom = 1.25;
  EXPECT_NEAR(MakeSlowMmaPathTool()->Run(in)->estimated_gain, 0.2, 1e-9);
}

TEST(SlowMmaPath, QuietOnWgmmaOnOlderGpusAndWithoutTensorWork) {
  InstructionMix mix;
  mix.tensor_mma = 8;
  mix.warpgroup_mma = 8;  // HGMMA
  AnalysisInput in = Input(BoundClass::kComputeTensor);
  in.sass = Sass(mix);
  in.device.cc_major = 9;
  EXPECT_FALSE(MakeSlowMmaPathTool()->Run(in));
  mix.warpgroup_mma = 0;
  in.sass = Sass(mix);
  in.device.cc_major = 8;  // A100: mma.sync is the full-rate path
  EXPECT_FALSE(MakeSlowMmaPathTool()->Run(in));
  in.device.cc_major = 9;
  in.flops = 1e9;
  in.matrix_flops = 1e8;  // mostly not matrix work
  EXPECT_FALSE(MakeSlowMmaPathTool()->Run(in));
  in.sass = Sass(InstructionMix{});  // no tensor instruction at all: no_tensor_cores' case
  in.matrix_flops = 1e9;
  EXPECT_FALSE(MakeSlowMmaPathTool()->Run(in));
  EXPECT_FALSE(MakeSlowMmaPathTool()->AppliesTo(BoundClass::kLaunchHost));
}

// --- no_tensor_cores ---------------------------------------------------------

TEST(NoTensorCores, FiresOnFfmaMatmul) {
  AnalysisInput in = Input(BoundClass::kComputeFp32,
                           {{metric::kTensorHmmaInst, 0}, {metric::kFfmaThreadInst, 6.9e10}});
  in.flops = 1.4e11;
  in.matrix_flops = 1.37e11;
  auto d = MakeNoTensorCoresTool()->Run(in);
  ExpectWellFormed(d, "no_tensor_cores");
  // The H200's executed-HMMA counter reads one per warp even without any MMA
  // (tests/data/ncu/h200_raw_page.csv): noise next to the FFMA work.
  in.metrics[metric::kTensorHmmaInst] = 524288;
  ExpectWellFormed(MakeNoTensorCoresTool()->Run(in), "no_tensor_cores");
}

// Advice respects the contract: under strict fp32 no TF32, but 3xTF32 or
// shared-memory and register tiling; a TF32 contract gets TF32.
TEST(NoTensorCores, AdviceFollowsTheContractsPrecision) {
  AnalysisInput in = Input(BoundClass::kMemoryL1Shared,
                           {{metric::kTensorHmmaInst, 0}, {metric::kFfmaThreadInst, 6.9e10}});
  in.flops = 1.4e11;
  in.matrix_flops = 1.37e11;
  in.matrix_precision = "fp32";
  in.contract_precision = "strict";
  auto strict = MakeNoTensorCoresTool()->Run(in);
  ExpectWellFormed(strict, "no_tensor_cores");
  EXPECT_NE(strict->advice.find("3xTF32"), std::string::npos) << strict->advice;
  EXPECT_NE(strict->advice.find("shared memory"), std::string::npos) << strict->advice;
  EXPECT_NE(strict->advice.find("TF32 is not allowed"), std::string::npos) << strict->advice;
  for (const auto& m : strict->suggested_moves) EXPECT_NE(m, "tf32_inputs");
  in.contract_precision = "tf32";
  auto tf32 = MakeNoTensorCoresTool()->Run(in);
  ExpectWellFormed(tf32, "no_tensor_cores");
  EXPECT_NE(tf32->advice.find("allows TF32 operands"), std::string::npos) << tf32->advice;
  EXPECT_EQ(tf32->suggested_moves.back(), "tf32_inputs");
  in.matrix_precision = "fp16";  // inputs already half precision: tensor cores as they are
  in.contract_precision = "strict";
  auto half = MakeNoTensorCoresTool()->Run(in);
  ExpectWellFormed(half, "no_tensor_cores");
  EXPECT_EQ(half->advice.find("not allowed"), std::string::npos);
}

TEST(NoTensorCores, FiresFromSassAlone) {
  InstructionMix mix;
  mix.ffma = 4096;
  AnalysisInput in = Input(BoundClass::kComputeFp32);
  in.sass = Sass(mix);
  in.flops = 1e9;
  in.matrix_flops = 0.9e9;
  ExpectWellFormed(MakeNoTensorCoresTool()->Run(in), "no_tensor_cores");
}

TEST(NoTensorCores, QuietWithHmmaOrWithoutMatmul) {
  AnalysisInput in = Input(BoundClass::kComputeFp32,
                           {{metric::kTensorHmmaInst, 1e6}, {metric::kFfmaThreadInst, 1e8}});
  in.flops = 1e9;
  in.matrix_flops = 0.9e9;
  EXPECT_FALSE(MakeNoTensorCoresTool()->Run(in));
  in.metrics[metric::kTensorHmmaInst] = 0;
  in.matrix_flops = 0;  // elementwise work: tensor cores do not apply
  EXPECT_FALSE(MakeNoTensorCoresTool()->Run(in));
}

// --- fp32_pipe_saturated -----------------------------------------------------

TEST(Fp32PipeSaturated, FiresAndSpotsUnfusedMath) {
  auto d = MakeFp32PipeSaturatedTool()->Run(
      Input(BoundClass::kComputeFp32, {{metric::kFmaPipePct, 88},
                                       {metric::kFfmaThreadInst, 1e9},
                                       {metric::kFaddThreadInst, 6e8},
                                       {metric::kFmulThreadInst, 6e8}}));
  ExpectWellFormed(d, "fp32_pipe_saturated");
  EXPECT_EQ(d->suggested_moves[0], "fuse_multiply_add");
}

TEST(Fp32PipeSaturated, FusedMathAtTheRoofIsInformationOnly) {
  auto d = MakeFp32PipeSaturatedTool()->Run(
      Input(BoundClass::kComputeFp32, {{metric::kFmaPipePct, 92},
                                       {metric::kFfmaThreadInst, 1e9},
                                       {metric::kFaddThreadInst, 1e7},
                                       {metric::kFmulThreadInst, 1e7}}));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, "info");
  EXPECT_EQ(d->suggested_moves[0], "reduce_flops");
}

TEST(Fp32PipeSaturated, QuietBelowTheRoof) {
  EXPECT_FALSE(MakeFp32PipeSaturatedTool()->Run(
      Input(BoundClass::kComputeFp32, {{metric::kFmaPipePct, 35}})));
}

// --- special_function_overhead -----------------------------------------------

TEST(SpecialFunctionOverhead, FiresOnMufuHeavySass) {
  InstructionMix mix;
  mix.mufu = 6;
  mix.ffma = 8;
  AnalysisInput in = Input(BoundClass::kLatency);
  in.sass = Sass(mix);
  ExpectWellFormed(MakeSpecialFunctionOverheadTool()->Run(in), "special_function_overhead");
  ExpectWellFormed(MakeSpecialFunctionOverheadTool()->Run(
                       Input(BoundClass::kComputeFp32, {{metric::kXuPipePct, 75}})),
                   "special_function_overhead");
}

TEST(SpecialFunctionOverhead, QuietOnPlainArithmetic) {
  InstructionMix mix;
  mix.mufu = 1;
  mix.ffma = 200;
  AnalysisInput in = Input(BoundClass::kComputeFp32);
  in.sass = Sass(mix);
  EXPECT_FALSE(MakeSpecialFunctionOverheadTool()->Run(in));
  EXPECT_FALSE(MakeSpecialFunctionOverheadTool()->Run(
      Input(BoundClass::kComputeFp32, {{metric::kXuPipePct, 8}})));
}

// --- warp_divergence ---------------------------------------------------------

TEST(WarpDivergence, FiresOnHalfEmptyWarps) {
  auto d = MakeWarpDivergenceTool()->Run(Input(
      BoundClass::kLatency, {{metric::kThreadsPerInst, 14.5}, {metric::kBranchUniformPct, 61}}));
  ExpectWellFormed(d, "warp_divergence");
}

TEST(WarpDivergence, QuietOnUniformWarps) {
  EXPECT_FALSE(MakeWarpDivergenceTool()->Run(Input(
      BoundClass::kLatency, {{metric::kThreadsPerInst, 31.6}, {metric::kBranchUniformPct, 99}})));
}

// --- many_small_kernels ------------------------------------------------------

TEST(ManySmallKernels, FiresOnAChainOfTinyLaunches) {
  AnalysisInput in = Input(BoundClass::kLaunchHost);
  in.kernel_launches = 12;
  in.kernel_ms = 0.036;
  in.time_ms = 0.09;
  auto d = MakeManySmallKernelsTool()->Run(in);
  ExpectWellFormed(d, "many_small_kernels");
  EXPECT_NEAR(d->evidence.at("mean_kernel_us"), 3, 1e-9);
  // With the timeline, the measured gaps set the gain instead of the model.
  in.gap_ms = 0.045;
  auto t = MakeManySmallKernelsTool()->Run(in);
  ExpectWellFormed(t, "many_small_kernels");
  EXPECT_NEAR(t->estimated_gain, 0.5, 1e-9);
  EXPECT_EQ(t->evidence.at("gap_ms_per_call"), 0.045);
}

// A launch-bound network of 193 short kernels: the gain is what the call
// could really save, never 100% (the kernels' own time stays).
TEST(ManySmallKernels, TheGainIsWhatTheCallCouldSave) {
  AnalysisInput in = Input(BoundClass::kLaunchHost);
  in.kernel_launches = 193;
  in.kernel_ms = 0.45;
  in.time_ms = 2.0;
  in.gap_ms = 1.9;  // the timeline's gaps can exceed the idle time (overlap)
  auto d = MakeManySmallKernelsTool()->Run(in);
  ExpectWellFormed(d, "many_small_kernels");
  EXPECT_NEAR(d->estimated_gain, (2.0 - 0.45) / 2.0, 1e-9);  // the idle time, not the gaps
  in.gap_ms = 1.2;
  EXPECT_NEAR(MakeManySmallKernelsTool()->Run(in)->estimated_gain, 1.2 / 2.0, 1e-9);
}

TEST(ManySmallKernels, QuietOnOneOrLongKernels) {
  AnalysisInput in = Input(BoundClass::kMemoryDram);
  in.kernel_launches = 1;
  in.kernel_ms = 0.2;
  in.time_ms = 0.21;
  EXPECT_FALSE(MakeManySmallKernelsTool()->Run(in));
  in.kernel_launches = 6;
  in.kernel_ms = 3;
  in.time_ms = 3.1;
  EXPECT_FALSE(MakeManySmallKernelsTool()->Run(in));
}

// --- host_overhead -----------------------------------------------------------

TEST(HostOverhead, FiresWhenTheGpuIdles) {
  AnalysisInput in = Input(BoundClass::kLaunchHost);
  in.time_ms = 0.5;
  in.kernel_ms = 0.1;
  auto d = MakeHostOverheadTool()->Run(in);
  ExpectWellFormed(d, "host_overhead");
  EXPECT_NEAR(d->estimated_gain, 0.8, 1e-9);
  EXPECT_FALSE(d->evidence.count("syncs_per_call"));  // no timeline: nothing said about it
  // The timeline's synchronisations and copies become evidence and advice.
  in.syncs = 2;
  in.copies = 2;
  d = MakeHostOverheadTool()->Run(in);
  ExpectWellFormed(d, "host_overhead");
  EXPECT_EQ(d->evidence.at("syncs_per_call"), 2);
  EXPECT_NE(d->advice.find("2 host synchronisation(s) per call and 2 memory copies"),
            std::string::npos)
      << d->advice;
}

TEST(HostOverhead, FiresOnSlowHostClock) {
  AnalysisInput in = Input(BoundClass::kMemoryDram);
  in.time_ms = 0.1;
  in.host_ms = 0.4;
  ExpectWellFormed(MakeHostOverheadTool()->Run(in), "host_overhead");
}

TEST(HostOverhead, QuietWhenKernelsFillTheCall) {
  AnalysisInput in = Input(BoundClass::kMemoryDram);
  in.time_ms = 0.5;
  in.kernel_ms = 0.48;
  in.host_ms = 0.52;
  EXPECT_FALSE(MakeHostOverheadTool()->Run(in));
}

}  // namespace
}  // namespace kopt
