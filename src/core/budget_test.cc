#include "core/budget.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace kopt {
namespace {

TEST(Budget, ParsesDurationsCountsAndKeys) {
  EXPECT_DOUBLE_EQ(ParseBudget("10m").wall_s, 600);
  EXPECT_DOUBLE_EQ(ParseBudget("1h30m").wall_s, 5400);
  EXPECT_DOUBLE_EQ(ParseBudget("90s").wall_s, 90);
  EXPECT_EQ(ParseBudget("40").candidates, 40);
  BudgetLimits l = ParseBudget("wall=30m, gpu=5m,candidates=200,tokens=2e6,cost=5");
  EXPECT_DOUBLE_EQ(l.wall_s, 1800);
  EXPECT_DOUBLE_EQ(l.gpu_s, 300);
  EXPECT_EQ(l.candidates, 200);
  EXPECT_EQ(l.llm_tokens, 2000000);
  EXPECT_DOUBLE_EQ(l.llm_cost_usd, 5);
  EXPECT_EQ(DescribeLimits(ParseBudget("10m,40")), "wall 10.0 min, 40 candidates");
}

TEST(Budget, RejectsNonsenseInOneSentence) {
  for (const char* bad :
       {"", "-5", "10x", "wall=-1m", "candidates=2.5", "speed=3", "0", "wall=0s", ",", "1h30"}) {
    try {
      ParseBudget(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--budget"), std::string::npos) << e.what();
    }
  }
}

TEST(Budget, ExhaustsOnTheFirstLimitReached) {
  double now = 100;
  Budget b(ParseBudget("wall=60s,candidates=3,gpu=10s"), [&] { return now; });
  EXPECT_FALSE(b.Exhausted());
  b.AddCandidate();
  b.AddGpuSeconds(4);
  now += 30;
  EXPECT_NEAR(b.FractionSpent(), 0.5, 1e-9);
  b.AddGpuSeconds(6);
  EXPECT_TRUE(b.Exhausted());
  EXPECT_NE(b.ExhaustedReason().find("GPU time"), std::string::npos);
  EXPECT_DOUBLE_EQ(b.Spent().wall_s, 30);
}

TEST(Budget, ResumesWithWhatWasSpent) {
  double now = 0;
  Budget b(ParseBudget("wall=100s"), [&] { return now; });
  BudgetSpent before;
  before.wall_s = 90;
  before.candidates = 7;
  b.Restore(before);
  EXPECT_FALSE(b.Exhausted());
  now += 11;
  EXPECT_TRUE(b.Exhausted());
  EXPECT_EQ(b.Spent().candidates, 7);
  EXPECT_NEAR(b.Spent().wall_s, 101, 1e-9);
  BudgetSpent round = BudgetSpentFromJson(ToJson(b.Spent()));
  EXPECT_EQ(round.candidates, 7);
}

TEST(Budget, UnlimitedNeverRunsOut) {
  Budget b(BudgetLimits{});
  for (int i = 0; i < 1000; ++i) b.AddCandidate();
  EXPECT_FALSE(b.Exhausted());
  EXPECT_DOUBLE_EQ(b.FractionSpent(), 0);
  EXPECT_EQ(DescribeLimits(BudgetLimits{}), "unlimited");
}

TEST(Budget, TheDefaultGrowsWithTheTasks) {
  EXPECT_DOUBLE_EQ(DefaultBudget(1).wall_s, 600);
  EXPECT_DOUBLE_EQ(DefaultBudget(30).wall_s, 600);
  EXPECT_DOUBLE_EQ(DefaultBudget(51).wall_s, 51 * 20);
  EXPECT_EQ(DefaultBudget(51).candidates, 0);
  EXPECT_DOUBLE_EQ(DefaultBudget(51).gpu_s, 0);
}

}  // namespace
}  // namespace kopt
