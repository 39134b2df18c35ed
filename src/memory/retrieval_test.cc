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
  auto relevance = [&](const KnowledgeEntry& e) {
    StructuralMatch m = MatchStructure(e, q);
    return m.excluded ? -1 : m.relevance;
  };
  EXPECT_EQ(relevance(Entry({}, {}, {})), 0);
  EXPECT_EQ(relevance(Entry({"softmax"}, {}, {})), kOpClassWeight);
  EXPECT_EQ(relevance(Entry({"gemm", "softmax"}, {"memory"}, {"sm_90"})),
            kOpClassWeight + kBottleneckWeight);
  EXPECT_TRUE(MatchStructure(Entry({}, {}, {"sm_90"}), q).arch_specific);
  EXPECT_FALSE(MatchStructure(Entry({}, {}, {}), q).arch_specific);
  EXPECT_EQ(relevance(Entry({"gemm"}, {}, {})), -1);
  EXPECT_EQ(relevance(Entry({}, {"compute"}, {})), -1);
  EXPECT_EQ(relevance(Entry({}, {}, {"sm_80"})), -1);
  // A query that names nothing matches everything equally.
  StructuralMatch any =
      MatchStructure(Entry({"gemm"}, {"compute.tensor"}, {"sm_90"}), KnowledgeQuery{});
  EXPECT_FALSE(any.excluded);
  EXPECT_EQ(any.relevance, 0);
  EXPECT_FALSE(any.arch_specific);
  // An op-class match weighs more than a bottleneck match.
  EXPECT_GT(kOpClassWeight, kBottleneckWeight);
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
