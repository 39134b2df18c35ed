#include <gtest/gtest.h>

#include "core/error.h"
#include "diagnose/roofline.h"
#include "testing/paths.h"

namespace kopt {
namespace {

RooflineThresholds RealThresholds() {
  return LoadRooflineThresholds(testing::SourceDir() / "data" / "diagnose" / "roofline.json");
}

RooflineInput H200Input() {
  RooflineInput in;
  in.ceilings.bandwidth_bytes_per_s = 4.0e12;
  in.ceilings.fp32_flops_per_s = 60e12;
  in.ceilings.tf32_flops_per_s = 400e12;
  in.ceilings.bf16_flops_per_s = 800e12;
  in.ceilings.fp16_flops_per_s = 800e12;
  in.sm_count = 132;
  return in;
}

TEST(Roofline, LoadsTheDataFile) {
  RooflineThresholds t = RealThresholds();
  EXPECT_GT(t.min_sol_pct, 0);
  EXPECT_GT(t.max_gpu_busy_fraction, 0);
  EXPECT_THROW(LoadRooflineThresholds("/nonexistent/roofline.json"), Error);
}

TEST(Roofline, DramBoundWithFloorAndHeadroom) {
  RooflineInput in = H200Input();
  in.time_ms = 0.2;
  in.kernel_ms = 0.19;
  in.dram_bytes = 0.6e9;  // 600 MB in 0.2 ms = 3 TB/s = 75%
  in.min_bytes = 0.4e9;
  in.metrics = {
      {metric::kDramThroughputPct, 86}, {metric::kL2ThroughputPct, 40}, {metric::kWaves, 12}};
  RooflineResult r = ClassifyRoofline(in, RealThresholds());
  EXPECT_EQ(r.bound, BoundClass::kMemoryDram);
  EXPECT_EQ(BoundClassName(r.bound), "memory.dram");
  EXPECT_EQ(r.floor_bound, "memory");
  EXPECT_DOUBLE_EQ(r.floor_ms, 0.1);
  EXPECT_DOUBLE_EQ(r.headroom, 2.0);
  EXPECT_TRUE(ToJson(r).contains("explanation"));
}

// Numbers from the H200 recording of the zoo's axpb_slabs (one 1 GB
// y = a*x + b in 32 launches): ncu saw each launch write 0.5 MB of its 16 MB
// output to DRAM (L2 held the rest past the kernel's end) and read 38% DRAM
// against 74% L2. The call must still move 1 GB less L2's 63 MB through DRAM.
TEST(Roofline, WritesHeldInL2DoNotMakeAStreamingCallL2Bound) {
  RooflineInput in = H200Input();
  in.ceilings.bandwidth_bytes_per_s = 4.67e12;
  in.l2_bytes = 62914560;
  in.time_ms = 0.379;
  in.kernel_ms = 0.305;
  in.min_bytes = 1073741824;
  in.metrics = {
      {metric::kDramThroughputPct, 38.4}, {metric::kL2ThroughputPct, 74.0}, {metric::kWaves, 31}};
  RooflineResult r = ClassifyRoofline(in, RealThresholds());
  EXPECT_EQ(r.bound, BoundClass::kMemoryDram) << r.explanation;
  EXPECT_TRUE(r.dram_from_min_bytes);
  EXPECT_NEAR(r.utilization.at("dram"), 100 * (1073741824.0 - 62914560) / 0.305e-3 / 4.67e12, 1e-6);
  EXPECT_NE(r.explanation.find("L2 held"), std::string::npos);

  // Work that fits in L2 gives no lower bound: the counter stands.
  RooflineInput small = in;
  small.min_bytes = 32e6;
  RooflineResult s = ClassifyRoofline(small, RealThresholds());
  EXPECT_FALSE(s.dram_from_min_bytes);
  EXPECT_DOUBLE_EQ(s.utilization.at("dram"), 38.4);
  EXPECT_EQ(s.bound, BoundClass::kMemoryL2);

  // A counter above the bound stands too (the kernel moves more than the minimum).
  RooflineInput busy = in;
  busy.metrics[metric::kDramThroughputPct] = 90;
  EXPECT_FALSE(ClassifyRoofline(busy, RealThresholds()).dram_from_min_bytes);
}

TEST(Roofline, RatesFromCeilingsWhenNoSolPercentages) {
  RooflineInput in = H200Input();
  in.time_ms = 1.0;
  in.flops = {{"bf16", 0.7e12 * 1.0}};  // 0.7 TFLOP in 1 ms = 700 TFLOP/s of 800
  RooflineResult r = ClassifyRoofline(in, RealThresholds());
  EXPECT_EQ(r.bound, BoundClass::kComputeTensor);
  EXPECT_EQ(r.floor_bound, "compute");
  EXPECT_NEAR(r.utilization.at("tensor"), 87.5, 1e-9);
}

TEST(Roofline, Fp32Compute) {
  RooflineInput in = H200Input();
  in.time_ms = 1;
  in.metrics = {{metric::kFmaPipePct, 91}, {metric::kDramThroughputPct, 10}};
  EXPECT_EQ(ClassifyRoofline(in, RealThresholds()).bound, BoundClass::kComputeFp32);
}

TEST(Roofline, SharedMemoryBound) {
  RooflineInput in = H200Input();
  in.time_ms = 1;
  in.metrics = {{metric::kL1ThroughputPct, 88}, {metric::kDramThroughputPct, 20}};
  EXPECT_EQ(ClassifyRoofline(in, RealThresholds()).bound, BoundClass::kMemoryL1Shared);
}

// A recurrence of 1024 dependent steps moving 8 MB: the bytes say 2 us, the
// chain at 1 us a step says 1.024 ms, and the headroom is against the chain.
TEST(Roofline, ADependentChainSetsTheFloorWhenItIsSlowerThanTheBytes) {
  RooflineInput in = H200Input();
  in.time_ms = 2.048;
  in.kernel_ms = 2.0;
  in.min_bytes = 8e6;
  in.latency_ms = 1.024;
  RooflineResult r = ClassifyRoofline(in, RealThresholds());
  EXPECT_EQ(r.floor_bound, "latency");
  EXPECT_DOUBLE_EQ(r.floor_ms, 1.024);
  EXPECT_DOUBLE_EQ(r.headroom, 2.0);
  in.latency_ms = 0.001;  // shorter than the bytes take: the memory term stands
  EXPECT_EQ(ClassifyRoofline(in, RealThresholds()).floor_bound, "memory");
}

TEST(Roofline, LatencyWhenNothingIsBusy) {
  RooflineInput in = H200Input();
  in.time_ms = 1;
  in.kernel_ms = 0.95;
  in.metrics = {{metric::kDramThroughputPct, 20},
                {metric::kL2ThroughputPct, 25},
                {metric::kFmaPipePct, 12},
                {metric::kWaves, 4}};
  EXPECT_EQ(ClassifyRoofline(in, RealThresholds()).bound, BoundClass::kLatency);
}

TEST(Roofline, LaunchHostWhenTheGpuIdles) {
  RooflineInput in = H200Input();
  in.time_ms = 0.1;
  in.kernel_ms = 0.02;
  in.metrics = {{metric::kDramThroughputPct, 90}};
  EXPECT_EQ(ClassifyRoofline(in, RealThresholds()).bound, BoundClass::kLaunchHost);
}

TEST(Roofline, SmallGrid) {
  RooflineInput in = H200Input();
  in.time_ms = 0.05;
  in.metrics = {{metric::kGridSize, 16}};  // 16 blocks on 132 SMs
  EXPECT_EQ(ClassifyRoofline(in, RealThresholds()).bound, BoundClass::kSmallGrid);
}

}  // namespace
}  // namespace kopt
