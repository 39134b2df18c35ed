#include <gtest/gtest.h>

#include "memory/trajectory.h"

namespace kopt {
namespace {

TrajectoryStep Step(int node, int parent, std::string move, std::string outcome,
                    std::string reason = "", double speedup = 0) {
  TrajectoryStep s;
  s.node = node;
  s.parent = parent;
  s.move = std::move(move);
  s.outcome = std::move(outcome);
  s.reason = std::move(reason);
  s.speedup = speedup;
  return s;
}

Trajectory Sample() {
  Trajectory t;
  t.Add(Step(1, 0, "vector width 4", "measured", "", 1.40));
  t.Add(Step(2, 1, "tile 128x128", "build_failed", "error: too much shared data"));
  t.Add(Step(3, 1, "stages 4", "measured", "", 1.90));
  t.Add(Step(4, 3, "use half2 math", "incorrect", "max abs error 0.02 > 0.001"));
  t.Add(Step(5, 3, "tile 256x128", "build_failed", "error: too much shared data"));
  t.Add(Step(6, 3, "unroll 8", "measured", "", 1.70));
  return t;
}

TEST(Trajectory, TriedNormalizesCaseAndWhitespace) {
  Trajectory t = Sample();
  EXPECT_TRUE(t.Tried("  Vector   WIDTH 4. "));
  EXPECT_TRUE(t.Tried("vector width 4", 0));
  EXPECT_FALSE(t.Tried("vector width 4", 3));  // not from node 3
  EXPECT_FALSE(t.Tried("vector width 8"));
  EXPECT_EQ(NormalizeMove("\tTile\n128x128 ."), "tile 128x128");
}

TEST(Trajectory, SummaryPutsTheBestFirstAndGroupsFailuresByReason) {
  std::string s = Sample().Summary(10000);
  EXPECT_EQ(s.find("Tried so far: 6 candidates, 3 measured, 3 failed."), 0u) << s;
  std::size_t best = s.find("Best: node 3 (1.90x vs eager): stages 4");
  std::size_t failed =
      s.find("- build_failed x2: error: too much shared data (moves: tile 256x128; tile 128x128)");
  std::size_t incorrect = s.find("- incorrect x1: max abs error");
  std::size_t newest = s.find("- node 6 (from 3): unroll 8 -> 1.70x");
  std::size_t older = s.find("- node 1 (from 0): vector width 4 -> 1.40x");
  ASSERT_NE(best, std::string::npos) << s;
  ASSERT_NE(failed, std::string::npos) << s;
  ASSERT_NE(incorrect, std::string::npos) << s;
  ASSERT_NE(newest, std::string::npos) << s;
  ASSERT_NE(older, std::string::npos) << s;
  EXPECT_LT(best, failed);
  EXPECT_LT(failed, incorrect);  // the larger group first
  EXPECT_LT(incorrect, newest);
  EXPECT_LT(newest, older);
  EXPECT_EQ(s.find("node 3 (from"), std::string::npos) << "the best is not repeated";
}

TEST(Trajectory, SummaryFitsAnyBudgetInWholeLines) {
  Trajectory t = Sample();
  std::string full = t.Summary(100000);
  for (std::size_t budget = 0; budget <= full.size() + 5; ++budget) {
    std::string s = t.Summary(budget);
    ASSERT_LE(s.size(), budget);
    if (budget >= full.size()) {
      EXPECT_EQ(s, full);
      continue;
    }
    if (budget >= 4) {
      ASSERT_FALSE(s.empty()) << budget;
    }
    if (s.empty()) continue;
    ASSERT_EQ(s.back(), '\n');
    // Every line but the last is a whole line of the full summary; the last says what was left out.
    std::size_t last = s.rfind('\n', s.size() - 2);
    std::string head = last == std::string::npos ? "" : s.substr(0, last + 1);
    std::string tail = s.substr(head.size());
    EXPECT_EQ(full.compare(0, head.size(), head), 0) << budget;
    EXPECT_EQ(tail.compare(0, 3, "..."), 0) << budget << ": " << s;
  }
}

TEST(Trajectory, LongReasonsAreShortenedInsideTheirLine) {
  Trajectory t;
  t.Add(Step(1, 0, "x", "build_failed", std::string(5000, 'e')));
  std::string s = t.Summary(100000);
  EXPECT_LT(s.size(), 400u);
  EXPECT_NE(s.find("eee..."), std::string::npos);
  EXPECT_NE(s.find("Best: nothing measured yet."), std::string::npos);
  EXPECT_EQ(t.ToJson()[0]["reason"].get<std::string>().size(), 5000u);
}

}  // namespace
}  // namespace kopt
