// The fusion generator on the suite's recorded op graphs
// (tests/data/graphs, recorded on the meta device by record.py there): which
// graphs become one kernel, what stops the others, and that every generated
// kernel compiles with real nvcc for sm_90a at its defaults and its knob
// extremes.
#include "plan/fusion.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>
#include <map>

#include "core/json.h"
#include "plan/sm90a_builds_for_test.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

OpGraph Graph(const std::string& name) {
  const Json j =
      ReadJsonFile(testing::SourceDir() / "tests" / "data" / "graphs" / (name + ".json"));
  auto g = OpGraphFromJson(j);
  if (!g) throw std::runtime_error(name + ": not a version-2 graph");
  return *g;
}

std::map<std::string, FusionResult> AllGraphs() {
  std::map<std::string, FusionResult> out;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() / "tests" / "data" / "graphs")) {
    if (e.path().extension() != ".json") continue;
    out[e.path().stem().string()] = FuseGraph(Graph(e.path().stem().string()));
  }
  return out;
}

TEST(OpGraph, ReadsDataflowAndSources) {
  const OpGraph g = Graph("level1_07_rmsnorm");
  ASSERT_EQ(g.nodes.size(), 6u);
  EXPECT_EQ(g.nodes[0].base, "pow");
  EXPECT_EQ(g.Value(g.nodes[0].in[0]).source, "abi");
  EXPECT_EQ(g.Value(g.nodes[0].in[0]).abi_index, 0);
  const GraphValue& w = g.Value(g.nodes[5].in[1]);
  EXPECT_EQ(w.role, "param");
  EXPECT_EQ(w.abi_index, 1);
  EXPECT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.Producer(g.outputs[0]), &g.nodes[5]);
  EXPECT_EQ(OpBase("aten::relu_"), "relu");
  EXPECT_EQ(OpBase("aten::_softmax"), "_softmax");
  EXPECT_EQ(OpBase("aten::add.Tensor"), "add");
}

TEST(OpGraph, AGraphWithoutDataflowIsNone) {
  EXPECT_FALSE(OpGraphFromJson(Json{{"nodes", Json::array({{{"op", "aten::relu"}}})}}).has_value());
  EXPECT_FALSE(OpGraphFromJson(Json::object()).has_value());
}

TEST(Fusion, ElementwiseAndRowChainsOfTheSuiteBecomeOneKernel) {
  const auto all = AllGraphs();
  const std::map<std::string, std::string> expect = {
      {"level1_01_relu", "elementwise"},
      {"level1_02_gelu", "elementwise"},
      {"level1_03_swish", "elementwise"},
      {"level1_04_softmax", "row"},
      {"level1_05_log_softmax", "row"},
      {"level1_06_layernorm", "row"},
      {"level1_07_rmsnorm", "row"},
      {"level1_11_mean_dim", "row"},
      {"level1_13_argmax", "row"},
      {"level1_30_var_mean", "row"},
      // Reductions over a dim other than the last: a thread per line.
      {"level1_10_sum_dim", "column"},
      {"level1_12_max_dim", "column"},
      // A loss: a row kernel, then one block adds the row values.
      {"level1_19_mse_loss", "total"},
  };
  for (const auto& [name, kind] : expect) {
    const auto it = all.find(name);
    ASSERT_NE(it, all.end()) << name;
    ASSERT_TRUE(it->second.kernel) << name << ": " << it->second.why_not;
    EXPECT_EQ(it->second.kernel->kind, kind) << name;
  }
  for (const auto& [name, r] : all)
    if (!r.kernel) std::cout << name << ": " << r.why_not << "\n";
}

TEST(Fusion, ColumnKernelsSplitLinesAcrossThreadsWhenTheLinesAreFew) {
  int column = 0;
  for (const auto& [name, r] : AllGraphs()) {
    if (!r.kernel || r.kernel->kind != "column") continue;
    ++column;
    const FusedKernel& k = *r.kernel;
    EXPECT_NE(k.source.find(fmt::format("constexpr int SPLIT = {};", k.split)), std::string::npos)
        << name;
    EXPECT_GE(k.split, 1) << name;
    EXPECT_LE(k.split, 32) << name;
    EXPECT_NE(k.about.find(fmt::format("{} thread(s) per line", k.split)), std::string::npos)
        << name << ": " << k.about;
  }
  EXPECT_GE(column, 2);
  // A sum over dim 1 of [64, 2048, 1024]: 65536 lines of 2048, four threads
  // each (262144 threads in all, about what 132 SMs hold).
  const FusedKernel& sum = *AllGraphs().at("level1_10_sum_dim").kernel;
  EXPECT_EQ(sum.lines, 65536);
  EXPECT_EQ(sum.split, 4);
}

// A softmax over dim 1 of [16, 1000, 4096] (two passes over each line of
// 1000): 32 threads per line keep their 32 steps in registers, so the
// second pass reads registers, not the 262 MB again. A one-pass sum keeps
// no cache.
TEST(Fusion, AMultiPassColumnKernelKeepsShortLinesInRegisters) {
  OpGraph g = Graph("level1_04_softmax");
  for (GraphValue& v : g.values) v.shape = {16, 1000, 4096};
  g.nodes[0].args[1] = 1;
  const FusionResult r = FuseGraph(g);
  ASSERT_TRUE(r.kernel) << r.why_not;
  const FusedKernel& k = *r.kernel;
  EXPECT_EQ(k.kind, "column");
  EXPECT_EQ(k.split, 32);
  EXPECT_NE(k.source.find("constexpr int CACHE_ITERS = 32;"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("constexpr int THREADS = 512;"), std::string::npos);
  // Every load of the cache issued before the first is used (predicated).
  EXPECT_NE(k.source.find("    if (live && r < cols) C0[k] = kopt_f(a.p0[base + r * inner]);\n"),
            std::string::npos);
  EXPECT_NE(k.source.find("    const float x0 = C0[k];\n"), std::string::npos);
  EXPECT_NE(k.source.find("fused_col_kernel<CACHE_ITERS><<<"), std::string::npos);
  if (testing::HaveNvcc()) {
    const auto b = testing::BuildForSm90a("plan-nvcc-col", {{k.source, "softmax_dim1", {}}});
    ASSERT_EQ(b.size(), 1u);
    EXPECT_TRUE(b[0].ok) << b[0].log;
  }
  const FusedKernel& sum = *AllGraphs().at("level1_10_sum_dim").kernel;
  EXPECT_NE(sum.source.find("constexpr int CACHE_ITERS = 0;"), std::string::npos);
  EXPECT_EQ(sum.source.find("kopt:knob CACHE_ITERS"), std::string::npos);
}

TEST(Fusion, SaysWhichOpStopsIt) {
  const auto all = AllGraphs();
  EXPECT_NE(all.at("level1_21_matmul_square").why_not.find("matrix"), std::string::npos);
}

// mean((p - t) ** 2) over [8192, 8192]: the row kernel's mean per row, then
// the mean of the 8192 row means. Too few rows (a [64, 1M] tensor) to fill
// the GPU: refused, saying why.
TEST(Fusion, ATotalReductionIsARowKernelAndAFixedOrderCombine) {
  OpGraph g = Graph("level1_19_mse_loss");
  const FusionResult r = FuseGraph(g);
  ASSERT_TRUE(r.kernel) << r.why_not;
  EXPECT_EQ(r.kernel->kind, "total");
  EXPECT_NE(r.kernel->about.find("combines the 8192 row values"), std::string::npos)
      << r.kernel->about;
  EXPECT_NE(r.kernel->source.find("static int kopt_forward_rows("), std::string::npos);
  EXPECT_NE(r.kernel->source.find("1.0f / (float)rows"), std::string::npos);
  for (int id : {0, 1, 2, 3}) g.values[static_cast<std::size_t>(id)].shape = {64, 1 << 20};
  const FusionResult few = FuseGraph(g);
  EXPECT_FALSE(few.kernel);
  EXPECT_NE(few.why_not.find("several dims"), std::string::npos) << few.why_not;
  EXPECT_NE(few.why_not.find("64 row(s) are too few"), std::string::npos) << few.why_not;
}

TEST(Fusion, RowKernelPassesFollowTheirDependencies) {
  const auto all = AllGraphs();
  EXPECT_EQ(all.at("level1_11_mean_dim").kernel->passes, 2);   // the sum, then the store
  EXPECT_EQ(all.at("level1_04_softmax").kernel->passes, 2);    // max and sum of exp online, write
  EXPECT_EQ(all.at("level1_06_layernorm").kernel->passes, 3);  // mean, variance, write
}

// A row of 16384 floats: 512 threads caching 8 float4s each (a hand-written
// 512 x 32 ran at 1.26x eager on the H200; the old default 256 x 64 at 0.76x).
// Rows of 4096 keep 256 threads and 4 float4s.
TEST(Fusion, LongRowsGetMoreThreadsAndAtMost32CachedFloatsEach) {
  const auto all = AllGraphs();
  const std::string& softmax = all.at("level1_04_softmax").kernel->source;
  EXPECT_NE(softmax.find("constexpr int THREADS = 512;"), std::string::npos);
  EXPECT_NE(softmax.find("constexpr int CACHE = 1;"), std::string::npos);
  EXPECT_NE(softmax.find("constexpr int64_t PLANNED_COLS = 16384;"), std::string::npos);
  // The cache's loads all issued before the first use: inside the compute
  // loop, after its break, they waited one by one (0.4738 ms vs 0.3607 on
  // an H100).
  EXPECT_NE(softmax.find("    if (i0 < base + cols) kopt_load<VEC>(a.p0, i0, C0[it]);\n"),
            std::string::npos);
  const std::string& layernorm = all.at("level1_06_layernorm").kernel->source;
  EXPECT_NE(layernorm.find("constexpr int THREADS = 256;"), std::string::npos);
  EXPECT_NE(layernorm.find("constexpr int CACHE = 1;"), std::string::npos);
}

// A norm's weight (one value per column) in the cached row kernel: its
// steps loaded together into registers before the loop that reads them,
// not one load per step behind the loop's break.
TEST(Fusion, TheCachedRowKernelLoadsAWeightsStepsTogether) {
  const auto all = AllGraphs();
  const std::string& rms = all.at("level1_07_rmsnorm").kernel->source;
  EXPECT_NE(rms.find("  float WC1[CI > 0 ? CI : 1][VEC];\n"), std::string::npos) << rms;
  EXPECT_NE(rms.find("    if (i0 < base + cols) kopt_load<VEC>(a.p1, i0 - base, WC1[it]);\n"),
            std::string::npos);
  EXPECT_NE(rms.find("    const float* W1 = WC1[it];\n"), std::string::npos);
}

TEST(Fusion, EveryGeneratedKernelCompilesForSm90a) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  std::vector<BuildRequest> requests;
  for (const auto& [name, r] : AllGraphs())
    if (r.kernel) requests.push_back({r.kernel->source, name, {}});
  ASSERT_GE(requests.size(), 10u);
  const auto results = testing::BuildForSm90a("plan-nvcc", requests);
  for (std::size_t i = 0; i < results.size(); ++i)
    EXPECT_TRUE(results[i].ok) << requests[i].name << "\n"
                               << results[i].log << "\n"
                               << requests[i].source;
}

}  // namespace
}  // namespace kopt
