#include "loop/learned_wins.h"

#include <gtest/gtest.h>

#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  fs::path dir = testing::ScratchDir("learned-wins");
  std::unique_ptr<RunStore> store = MakeSqliteRunStore(dir / "runs.db");
  std::string run;
  explicit Fixture(const std::string& arch = "sm_90") {
    NewRun nr;
    nr.options = {{"arch", arch}, {"proposer", "llm"}};
    nr.device = {{"name", "NVIDIA H200"}};
    run = store->CreateRun(nr).id;
    TaskRecord t;
    t.run_id = run;
    t.index = 0;
    t.name = "relu_sized";
    t.path = "relu_sized.py";
    t.bundle.eager_ms = SampleSummary{};
    t.bundle.eager_ms->median = 1.0;
    t.bundle.floor_bound = "memory";
    store->AddTask(t);
    Node(0, std::nullopt, "", NodeKind::kReference);
  }
  void Node(int id, std::optional<int> parent, const std::string& move,
            NodeKind kind = NodeKind::kHybrid) {
    NodeRecord n;
    n.run_id = run;
    n.id = id;
    n.parent = parent;
    n.move = move;
    n.proposer = "llm";
    n.kind = kind;
    n.name = "n" + std::to_string(id);
    n.source = kind == NodeKind::kReference ? "" : "src " + std::to_string(id);
    n.source_hash = "h" + std::to_string(id);
    store->AddNode(n);
  }
  void Outcome_(int id, const Outcome& o) {
    store->RecordOutcome(MakeOutcomeRecord(run, 0, id, o), BudgetSpent{});
  }
  static Measured Ms(double ms) {
    Measured m;
    m.time_ms.median = ms;
    return m;
  }
};

TEST(LearnedWins, OnlyMeasuredChildrenFasterThanTheirParentAreOffered) {
  Fixture f;
  f.Node(1, 0, "llm: one torch call");  // 2x the reference's eager time
  f.Outcome_(1, Fixture::Ms(0.5));
  f.Node(2, 0, "llm: wrong idea");  // incorrect: never offered
  f.Outcome_(2, Incorrect{{"output differs"}});
  f.Node(3, 1, "llm: slower");  // slower than its parent
  f.Outcome_(3, Fixture::Ms(0.6));
  f.Node(4, 1, "llm: noise");  // 2% faster: offered, refused as noise
  f.Outcome_(4, Fixture::Ms(0.49));
  f.Node(5, 1, "llm: unmeasured");  // proposed, never measured

  std::vector<LearnedWin> wins = LearnedWins(*f.store, f.run, 0);
  ASSERT_EQ(wins.size(), 2u);
  EXPECT_EQ(wins[0].move, "llm: one torch call");
  EXPECT_DOUBLE_EQ(wins[0].parent_ms, 1.0);
  EXPECT_DOUBLE_EQ(wins[0].child_ms, 0.5);
  EXPECT_TRUE(wins[0].verified && wins[0].measured);
  EXPECT_EQ(wins[0].arch, "sm_90");
  EXPECT_EQ(wins[0].bottleneck, "memory");
  EXPECT_EQ(wins[0].provenance["run"], f.run);
  EXPECT_EQ(wins[0].provenance["node"], 1);
  EXPECT_EQ(wins[0].provenance["gpu"], "NVIDIA H200");
  EXPECT_EQ(wins[1].move, "llm: noise");
  EXPECT_DOUBLE_EQ(wins[1].parent_ms, 0.5);

  auto kb = OpenKnowledgeBase(f.dir / "memory.db", "");
  LearnedSummary s = AdmitLearnedWins(*f.store, f.run, kb.get());
  EXPECT_EQ(s.offered, 2);
  EXPECT_EQ(s.admitted, 1);
  ASSERT_EQ(s.admissions.size(), 2u);
  EXPECT_FALSE(s.admissions[1].admitted) << s.admissions[1].reason;
  auto entry = kb->Get(s.admissions[0].id);
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->origin, "learned");
  EXPECT_NEAR(entry->gain, 2.0, 1e-9);
  EXPECT_EQ(entry->provenance["run"], f.run);
  EXPECT_EQ(entry->provenance["node"], 1);
  EXPECT_EQ(entry->provenance["gpu"], "NVIDIA H200");
}

TEST(LearnedWins, AKernelEmulatedOnTheCpuIsNeverAWin) {
  Fixture f("host");
  f.Node(1, 0, "a cuda kernel", NodeKind::kCuda);  // timed in emulation
  f.Outcome_(1, Fixture::Ms(0.5));
  f.Node(2, 0, "a hybrid", NodeKind::kHybrid);  // PyTorch on the CPU: a real time
  f.Outcome_(2, Fixture::Ms(0.5));
  std::vector<LearnedWin> wins = LearnedWins(*f.store, f.run, 0);
  ASSERT_EQ(wins.size(), 1u);
  EXPECT_EQ(wins[0].move, "a hybrid");
}

TEST(LearnedWins, NoKnowledgeBaseOrNoRunOffersNothing) {
  Fixture f;
  EXPECT_EQ(AdmitLearnedWins(*f.store, f.run, nullptr).offered, 0);
  EXPECT_TRUE(LearnedWins(*f.store, "no-such-run", 0).empty());
}

}  // namespace
}  // namespace kopt
