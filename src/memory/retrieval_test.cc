#include <gtest/gtest.h>

#include "memory/retrieval.h"

namespace kopt {
namespace {

KnowledgeEntry Entry(std::vector<std::string> ops, std::vector<std::string> bns,
                     std::vector<std::string> archs) {
  KnowledgeEntry e;
  e.op_classes = std::move(ops);
  e.bottlenecks = std::move(bns);
  e.archs = std::move(archs);
  return e;
}

TEST(Retrieval, SpecificMatchesOutrankWildcardsAndMismatchesAreExcluded) {
  KnowledgeQuery q{"softmax", "memory.dram", "sm_90a", "", 5};
  EXPECT_EQ(StructuralScore(Entry({}, {}, {}), q), 0);
  EXPECT_EQ(StructuralScore(Entry({"softmax"}, {}, {}), q), kOpClassWeight);
  EXPECT_EQ(StructuralScore(Entry({"gemm", "softmax"}, {"memory"}, {"sm_90"}), q),
            kOpClassWeight + kBottleneckWeight + kArchWeight);
  EXPECT_EQ(StructuralScore(Entry({"gemm"}, {}, {}), q), -1);
  EXPECT_EQ(StructuralScore(Entry({}, {"compute"}, {}), q), -1);
  EXPECT_EQ(StructuralScore(Entry({}, {}, {"sm_80"}), q), -1);
  // A query that names nothing matches everything equally.
  EXPECT_EQ(StructuralScore(Entry({"gemm"}, {"compute.tensor"}, {"sm_90"}), KnowledgeQuery{}), 0);
  // An op-class match weighs more than bottleneck and arch together.
  EXPECT_GT(kOpClassWeight, kBottleneckWeight + kArchWeight);
}

TEST(Retrieval, BottleneckFamiliesAndArchVariants) {
  EXPECT_TRUE(BottleneckMatches("memory", "memory.dram"));
  EXPECT_TRUE(BottleneckMatches("memory.l2", "memory"));
  EXPECT_TRUE(BottleneckMatches("latency", "latency"));
  EXPECT_FALSE(BottleneckMatches("memory", "memory_other"));
  EXPECT_FALSE(BottleneckMatches("memory.dram", "memory.l2"));
  EXPECT_TRUE(ArchMatches("sm_90", "sm_90a"));
  EXPECT_FALSE(ArchMatches("sm_90", "sm_80"));
}

TEST(Retrieval, FtsExpressionQuotesWordsAndDropsSyntax) {
  EXPECT_EQ(FtsMatchExpression(""), "");
  EXPECT_EQ(FtsMatchExpression("  \"'-:*()^  "), "");
  EXPECT_EQ(FtsMatchExpression("bank_conflicts in NEAR(smem, 2)"),
            "\"bank\" OR \"conflicts\" OR \"in\" OR \"near\" OR \"smem\" OR \"2\"");
  EXPECT_EQ(FtsMatchExpression("Softmax softmax SOFTMAX"), "\"softmax\"");
  std::string many;
  for (int i = 0; i < 100; ++i) many += "w" + std::to_string(i) + " ";
  std::string expr = FtsMatchExpression(many);
  EXPECT_EQ(std::count(expr.begin(), expr.end(), '"'), 2 * kMaxFtsTerms);
}

}  // namespace
}  // namespace kopt
