// TaskOpClass on the suite's op graphs (tests/data/graphs, recorded on the
// meta device): every class is a name of knowledge/vocabulary.json, so
// retrieval by structure finds the entries written for it.
#include <gtest/gtest.h>

#include <map>

#include "core/json.h"
#include "propose/memory_query.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

std::string ClassOf(const std::string& graph) {
  TaskBundle b;
  b.graph = ReadJsonFile(testing::SourceDir() / "tests/data/graphs" / (graph + ".json"));
  return TaskOpClass(&b);
}

TEST(TaskOpClass, TheSuiteGraphsGetTheVocabularysNames) {
  const Json vocabulary = ReadJsonFile(testing::SourceDir() / "knowledge/vocabulary.json");
  int n = 0;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() / "tests/data/graphs")) {
    if (e.path().extension() != ".json") continue;
    std::string c = ClassOf(e.path().stem().string());
    EXPECT_TRUE(vocabulary["op_classes"].contains(c)) << e.path().stem() << ": " << c;
    ++n;
  }
  EXPECT_GE(n, 30);
  const std::map<std::string, std::string> expected = {
      {"level1_01_relu", "elementwise"},   {"level1_04_softmax", "softmax"},
      {"level1_06_layernorm", "norm"},     {"level1_07_rmsnorm", "norm"},
      {"level1_10_sum_dim", "reduce"},     {"level1_13_argmax", "reduce"},
      {"level1_14_maxpool2d", "pool"},     {"level1_16_cumsum", "scan"},
      {"level1_19_mse_loss", "loss"},      {"level1_20_cross_entropy", "loss"},
      {"level1_21_matmul_square", "gemm"}, {"level1_26_conv2d", "conv"},
  };
  for (const auto& [graph, want] : expected) EXPECT_EQ(ClassOf(graph), want) << graph;
  TaskBundle none;
  EXPECT_EQ(TaskOpClass(&none), "");
}

}  // namespace
}  // namespace kopt
