#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>

#include "build/ptxas_report.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "profile/metrics.h"
#include "profile/ncu_csv.h"
#include "profile/profiler.h"
#include "profile/sass.h"
#include "profile/static_profile.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

std::string Data(const std::string& relative) {
  return ReadTextFile(testing::SourceDir() / "tests" / "data" / relative);
}

const SassFunction* FindFn(const std::vector<SassFunction>& fs, const std::string& name) {
  for (const auto& f : fs) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Metrics helpers

TEST(Metrics, LookupsRatiosAndSums) {
  Metrics m{{"a.sum", 10}, {"b.sum", 4}, {"smsp__average_warps_issue_stalled_x_per_issue_active.ratio", 2},
            {"smsp__average_warps_issue_stalled_y_per_issue_active.ratio", 3}};
  EXPECT_EQ(MetricOr(m, "a.sum"), 10);
  EXPECT_EQ(MetricOr(m, "missing", -1), -1);
  EXPECT_FALSE(GetMetric(m, "missing"));
  EXPECT_DOUBLE_EQ(*MetricRatio(m, "a.sum", "b.sum"), 2.5);
  EXPECT_FALSE(MetricRatio(m, "a.sum", "missing"));
  EXPECT_EQ(*FirstMetric(m, {"missing", "b.sum"}), 4);
  EXPECT_EQ(*SumMetrics(m, metric::kStallPrefix, metric::kStallSuffix), 5);
  EXPECT_FALSE(SumMetrics(m, "zzz"));
  EXPECT_EQ(MetricsFromJson(ToJson(m)), m);
}

TEST(Metrics, AccumulateAddsCountersAndWeightsAverages) {
  Metrics total;
  AccumulateMetrics(&total, {{"x.sum", 5}, {"p.pct", 80}}, 0.25);
  AccumulateMetrics(&total, {{"x.sum", 7}, {"p.pct", 40}}, 0.75);
  EXPECT_EQ(total["x.sum"], 12);
  EXPECT_DOUBLE_EQ(total["p.pct"], 50);
}

TEST(Metrics, KoptListHasTheStallFamily) {
  const auto& list = KoptNcuMetrics();
  EXPECT_NE(std::find(list.begin(), list.end(), metric::kDuration), list.end());
  EXPECT_NE(std::find(list.begin(), list.end(),
                      "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"),
            list.end());
}

TEST(Metrics, RecordScriptListMatchesKoptList) {
  // tests/data/ncu/metrics.txt is what record.sh passes to ncu --metrics.
  std::vector<std::string> listed;
  std::istringstream in(Data("ncu/metrics.txt"));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') listed.push_back(line);
  }
  EXPECT_EQ(listed, KoptNcuMetrics());
}

// ---------------------------------------------------------------------------
// ncu CSV (hand-written fixtures; see tests/data/ncu/README.md)

TEST(NcuCsv, SplitsQuotedRecordsAndNumbers) {
  auto f = SplitCsvRecord(R"("a","1,024","say ""hi""",,x)");
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(f[1], "1,024");
  EXPECT_EQ(f[2], "say \"hi\"");
  EXPECT_EQ(f[3], "");
  EXPECT_EQ(*ParseNcuNumber("1,024.5"), 1024.5);
  EXPECT_FALSE(ParseNcuNumber("n/a"));
  EXPECT_FALSE(ParseNcuNumber(""));
  EXPECT_FALSE(ParseNcuNumber("Hopper"));
  EXPECT_EQ(NcuScale("usecond"), 1e3);
  EXPECT_EQ(NcuScale("Mbyte"), 1e6);
  EXPECT_EQ(NcuScale("%"), 1);
}

// Recorded on the H200 by tests/data/ncu/record.sh (ncu 2025.3.1).
TEST(NcuCsv, RawPageOneRowPerLaunchWithUnits) {
  NcuReport r = ParseNcuCsv(Data("ncu/h200_raw_page.csv"));
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.kernels.size(), 10u);  // the program's own "ok" line is skipped
  const NcuKernel& copy = r.kernels[0];
  EXPECT_EQ(copy.id, 0);
  EXPECT_EQ(copy.name.substr(0, 11), "copy_scalar");
  EXPECT_EQ(copy.grid_size, "(65536, 1, 1)");
  EXPECT_EQ(copy.block_size, "(256, 1, 1)");
  EXPECT_EQ(copy.cc, "9.0");
  EXPECT_DOUBLE_EQ(copy.metrics.at(metric::kDuration), 49440);  // "49,440" ns
  EXPECT_DOUBLE_EQ(copy.metrics.at(metric::kDramBytes), 115116544);
  EXPECT_EQ(copy.units.at(metric::kDuration), "ns");
  // Every metric kopt asks for came back for every launch.
  for (const auto& k : r.kernels) {
    for (const auto& m : KoptNcuMetrics()) EXPECT_TRUE(k.metrics.count(m)) << k.name << " " << m;
  }
  // Bank conflicts: the column read conflicts, the float4 copy does not.
  EXPECT_GT(r.kernels[8].metrics.at(metric::kSharedLdConflicts), 1e6);
  EXPECT_EQ(r.kernels[1].metrics.at(metric::kSharedLdConflicts), 0);
  // The wmma kernel issued HMMA. (On the H200 this counter is not zero for
  // kernels without any MMA either: copy_scalar shows one per warp, so the
  // no_tensor_cores tool reads the SASS, not this counter.)
  EXPECT_GT(r.kernels[6].metrics.at(metric::kTensorHmmaInst), 0);
  EXPECT_EQ(r.kernels[0].metrics.at(metric::kTensorHmmaInst), 524288);
}

TEST(NcuCsv, BaseUnitsPageReadsTheSame) {
  NcuReport a = ParseNcuCsv(Data("ncu/h200_raw_page.csv"));
  NcuReport b = ParseNcuCsv(Data("ncu/h200_raw_page_base_units.csv"));
  ASSERT_TRUE(b.ok()) << b.error;
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    EXPECT_EQ(a.kernels[i].name, b.kernels[i].name);
    // A separate ncu run: DRAM bytes agree to a few percent, not exactly.
    EXPECT_NEAR(a.kernels[i].metrics.at(metric::kDramBytes), b.kernels[i].metrics.at(metric::kDramBytes),
                0.1 * a.kernels[i].metrics.at(metric::kDramBytes) + 1024);
    EXPECT_EQ(b.kernels[i].units.at(metric::kDuration), "ns");
  }
}

TEST(NcuCsv, DetailsPageLongLayout) {
  NcuReport raw = ParseNcuCsv(Data("ncu/h200_raw_page.csv"));
  NcuReport r = ParseNcuCsv(Data("ncu/h200_details_page.csv"));
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.kernels.size(), raw.kernels.size());
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    EXPECT_EQ(r.kernels[i].name, raw.kernels[i].name);
    // The details page prints scaled units (usecond, Mbyte); it is a separate
    // ncu run, so durations agree only roughly.
    EXPECT_NEAR(r.kernels[i].metrics.at(metric::kDuration), raw.kernels[i].metrics.at(metric::kDuration),
                0.25 * raw.kernels[i].metrics.at(metric::kDuration));  // a separate ncu run
    EXPECT_EQ(r.kernels[i].metrics.at(metric::kRegistersPerThread),
              raw.kernels[i].metrics.at(metric::kRegistersPerThread));
  }
}

TEST(NcuCsv, NoTableIsAnErrorValue) {
  NcuReport r = ParseNcuCsv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_EQ(r.warnings.size(), 1u);
}

// The source page of transpose_naive recorded on the H200 (record.sh): a
// "Kernel Name" line above the header, addresses as absolute PCs, the SASS
// indented, per-reason columns with short names (stall_long_sb, stall_drain).
TEST(NcuCsv, SourcePageRecordedOnTheH200) {
  SourceHotspots h = ParseSourcePage(Data("ncu/h200_source_page.csv"), 3);
  ASSERT_TRUE(h.error.empty()) << h.error;
  EXPECT_EQ(h.stall_column, "Warp Stall Sampling (All Samples)");
  EXPECT_EQ(h.total_samples, 32282);
  ASSERT_EQ(h.top.size(), 3u);
  // Most samples sit on the BRA after EXIT, never executed: finished warps
  // waiting for their scattered stores to drain.
  EXPECT_EQ(h.top[0].source, "BRA 0x7efa8f7a9170");
  EXPECT_EQ(h.top[0].stall_samples, 17345);
  EXPECT_EQ(h.top[0].executed, 0);
  EXPECT_EQ(h.top[0].top_reason, "drain");
  EXPECT_EQ(h.top[0].top_reason_samples, 17301);
  // Then the store, waiting on the load that feeds it.
  EXPECT_EQ(h.top[1].source, "STG.E desc[UR4][R4.64], R3");
  EXPECT_EQ(h.top[1].executed, 524288);
  EXPECT_EQ(h.top[1].top_reason, "long_scoreboard");
  EXPECT_EQ(h.top[1].top_reason_samples, 9985);
  EXPECT_EQ(h.top[2].address, "0x7efa8f7a9070");
}

TEST(NcuCsv, MergeLaunchesSumsCountersAndWeightsPercentages) {
  NcuReport r = ParseNcuCsv(Data("ncu/h200_raw_page.csv"));
  Metrics all = MergeLaunches(r);
  double total = 0;
  for (const auto& k : r.kernels) total += k.metrics.at(metric::kDuration);
  EXPECT_DOUBLE_EQ(all.at(metric::kDuration), total);
  // copy_scalar ran twice (full grid, then 4 blocks): duration-weighted percentage.
  const Metrics& big = r.kernels[0].metrics;
  const Metrics& tiny = r.kernels[9].metrics;
  Metrics one = MergeLaunches(r, "copy_scalar");
  double w = big.at(metric::kDuration) + tiny.at(metric::kDuration);
  EXPECT_NEAR(one.at(metric::kDramThroughputPct),
              (big.at(metric::kDramThroughputPct) * big.at(metric::kDuration) +
               tiny.at(metric::kDramThroughputPct) * tiny.at(metric::kDuration)) / w,
              1e-9);
  EXPECT_DOUBLE_EQ(one.at(metric::kDramBytes), big.at(metric::kDramBytes) + tiny.at(metric::kDramBytes));
}

// ---------------------------------------------------------------------------
// SASS (real cuobjdump output; see tests/data/sass/README.md)

TEST(Sass, AccessWidths) {
  EXPECT_EQ(AccessBits("LDG.E.128.CONSTANT"), 128);
  EXPECT_EQ(AccessBits("LDG.E.64"), 64);
  EXPECT_EQ(AccessBits("LDG.E"), 32);
  EXPECT_EQ(AccessBits("LDS.U8"), 8);
  EXPECT_EQ(AccessBits("STG.E.U16"), 16);
  EXPECT_EQ(AccessBits("LDL.LU"), 32);
}

TEST(Sass, KernelsFixtureInstructionMix) {
  auto fs = ParseSass(Data("sass/kernels_sm90.sass"));
  ASSERT_EQ(fs.size(), 7u);
  for (const auto& f : fs) EXPECT_EQ(f.arch, "sm_90") << f.name;

  const SassFunction* scalar = FindFn(fs, "copy_scalar");
  ASSERT_NE(scalar, nullptr);
  EXPECT_EQ(scalar->mix.global_loads.Total(), 1);
  EXPECT_EQ(scalar->mix.global_loads.by_bits.at(32), 1);
  EXPECT_EQ(scalar->mix.global_stores.by_bits.at(32), 1);
  EXPECT_EQ(scalar->mix.global_loads.AtLeast(128), 0);

  const SassFunction* vec = FindFn(fs, "copy_float4");
  ASSERT_NE(vec, nullptr);
  EXPECT_EQ(vec->mix.global_loads.by_bits.at(128), 1);
  EXPECT_EQ(vec->mix.global_stores.by_bits.at(128), 1);
  EXPECT_EQ(vec->opcodes.at("LDG.E.128.CONSTANT"), 1);

  const SassFunction* local = FindFn(fs, "local_array");
  ASSERT_NE(local, nullptr);
  EXPECT_GT(local->mix.local_stores.Total(), 0);
  EXPECT_GT(local->mix.local_loads.Total(), 0);

  const SassFunction* spill = FindFn(fs, "register_spill");
  ASSERT_NE(spill, nullptr);
  EXPECT_GT(spill->mix.local_stores.Total(), 10);
  EXPECT_GT(spill->mix.local_loads.Total(), 10);
  EXPECT_GT(spill->mix.ffma, 100);

  const SassFunction* smem = FindFn(fs, "smem_reduce");
  ASSERT_NE(smem, nullptr);
  EXPECT_GT(smem->mix.shared_loads.Total(), 0);
  EXPECT_GT(smem->mix.shared_stores.Total(), 0);
  EXPECT_GT(smem->mix.barriers, 0);
  EXPECT_EQ(smem->mix.shuffles, 5);
  EXPECT_EQ(smem->mix.atomics, 1);
  EXPECT_EQ(smem->mix.local_loads.Total(), 0);

  const SassFunction* sfu = FindFn(fs, "softplus_branchy");
  ASSERT_NE(sfu, nullptr);
  EXPECT_GE(sfu->mix.mufu, 3);

  const SassFunction* mma = FindFn(fs, "wmma_tile");
  ASSERT_NE(mma, nullptr);
  EXPECT_EQ(mma->mix.tensor_mma, 2);
  EXPECT_EQ(mma->mix.warpgroup_mma, 0);  // HMMA: mma.sync
  EXPECT_EQ(scalar->mix.tensor_mma, 0);
  // HFMA2.MMA is a move on the MMA pipe, not tensor-core work.
  for (const auto& f : fs) {
    if (f.name != "wmma_tile") {
      EXPECT_EQ(f.mix.tensor_mma, 0) << f.name;
    }
  }
}

TEST(Sass, SharedObjectDumpWithMangledNames) {
  auto fs = ParseSass(Data("sass/candidate_lib_sm90.sass"));
  ASSERT_EQ(fs.size(), 3u);
  const SassFunction* axpy = FindFn(fs, "_Z4axpyIfLi4EEvPT_PKS0_S0_i");
  ASSERT_NE(axpy, nullptr);
  EXPECT_EQ(axpy->demangled, "void axpy<float, 4>(float*, float const*, float, int)");
  EXPECT_EQ(axpy->arch, "sm_90");
  EXPECT_GT(axpy->mix.global_loads.Total(), 0);
  const SassFunction* dbl = FindFn(fs, "_Z4axpyIdLi2EEvPT_PKS0_S0_i");
  ASSERT_NE(dbl, nullptr);
  EXPECT_GT(dbl->mix.dfma, 0);
}

TEST(Sass, HopperWarpgroupMma) {
  auto fs = ParseSass(Data("sass/wgmma_sm90a.sass"));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].name, "wgmma_tile");
  EXPECT_EQ(fs[0].arch, "sm_90a");
  EXPECT_EQ(fs[0].mix.tensor_mma, 1);
  EXPECT_EQ(fs[0].mix.warpgroup_mma, 1);
  EXPECT_EQ(fs[0].opcodes.at("HGMMA.64x8x16.F32"), 1);
}

TEST(Sass, GarbageParsesToNothing) {
  EXPECT_TRUE(ParseSass("").empty());
  EXPECT_TRUE(ParseSass("nvcc fatal: nothing here\n").empty());
}

// ---------------------------------------------------------------------------
// Static profile

BuildResult FixtureBuild(const fs::path& so) {
  BuildResult b;
  b.ok = true;
  b.so_path = so;
  b.arch = "sm_90";
  b.resources = ParsePtxasReport(Data("sass/candidate_lib.ptxas.txt"));
  return b;
}

TEST(StaticProfile, MergesResourcesAndSassThroughAFakeCuobjdump) {
  fs::path dir = testing::ScratchDir("static-profile");
  fs::path tool = dir / "cuobjdump";
  WriteTextFileAtomic(tool, "#!/bin/sh\ncat '" +
                                (testing::SourceDir() / "tests/data/sass/candidate_lib_sm90.sass").string() +
                                "'\n");
  ::chmod(tool.c_str(), 0755);
  StaticReport r = StaticProfile(FixtureBuild(dir / "candidate.so"), {tool.string()});
  EXPECT_TRUE(r.sass_available);
  EXPECT_TRUE(r.notes.empty());
  ASSERT_EQ(r.kernels.size(), 3u);
  const StaticKernel* k = FindStaticKernel(r, "void axpy<float, 4>(float*, float const*, float, int)");
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->resources);
  ASSERT_TRUE(k->sass);
  EXPECT_EQ(k->resources->registers, 17);
  EXPECT_GT(k->sass->mix.global_loads.Total(), 0);
  EXPECT_TRUE(ToJson(r)["kernels"].is_array());
}

TEST(StaticProfile, MissingCuobjdumpIsSaidNotThrown) {
  fs::path dir = testing::ScratchDir("static-profile-missing");
  StaticReport r = StaticProfile(FixtureBuild(dir / "candidate.so"), {(dir / "no-such-tool").string()});
  EXPECT_FALSE(r.sass_available);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.kernels.size(), 3u);  // the ptxas resources are still there
  EXPECT_TRUE(r.kernels[0].resources);
}

TEST(StaticProfile, RealCuobjdumpOnARealBuild) {
  std::string tool = FindCuobjdump();
  if (tool.empty() || !testing::HaveNvcc()) GTEST_SKIP() << "needs nvcc and cuobjdump (KOPT_CUOBJDUMP)";
  fs::path dir = testing::ScratchDir("static-profile-real");
  std::string nvcc = FindOnPath("nvcc");
  if (nvcc.empty()) nvcc = "/usr/local/cuda/bin/nvcc";
  fs::path so = dir / "candidate.so";
  ProcessOptions compile;
  compile.timeout_s = 120;
  ProcessResult built = RunProcess(
      {nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-shared", "-Xptxas", "-v",
       "-gencode=arch=compute_90,code=sm_90", "-o", so.string(),
       (testing::SourceDir() / "tests/data/sass/candidate_lib.cu").string()},
      compile);
  ASSERT_TRUE(built.ok()) << built.err;
  BuildResult b;
  b.ok = true;
  b.so_path = so;
  b.resources = ParsePtxasReport(built.out + built.err);
  StaticReport r = StaticProfile(b);
  EXPECT_TRUE(r.sass_available) << (r.notes.empty() ? "" : r.notes[0]);
  const StaticKernel* k = FindStaticKernel(r, "zero_fill");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->resources && k->sass);
}

}  // namespace
}  // namespace kopt
