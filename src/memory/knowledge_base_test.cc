// The SQLite knowledge base on real files: retrieval, FTS5 with hostile
// text, the admission rule, persistence and curated reloads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <thread>

#include "core/error.h"
#include "core/json.h"
#include "core/paths.h"
#include "memory/admission.h"
#include "memory/knowledge.h"
#include "store/sqlite_db.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

std::string Md(const std::string& title, const std::string& ops, const std::string& bns,
               const std::string& text) {
  return "---\ntitle: " + title + "\nop_classes: " + ops + "\nbottlenecks: " + bns +
         "\narchs: []\ntechnique: " + text + "\napplies_when: " + text +
         "\nexpected_effect: faster\n" + "pitfalls: none known\n---\n\nBody of " + title + ".\n";
}

struct Fixture {
  fs::path dir = testing::ScratchDir("memory");
  fs::path knowledge = dir / "knowledge";
  fs::path db = dir / "memory.db";
  Fixture() {
    fs::create_directories(knowledge);
    WriteTextFileAtomic(knowledge / "README.md", "not an entry\n");
    WriteTextFileAtomic(
        knowledge / "softmax-online.md",
        Md("Online softmax", "[softmax]", "[memory]", "one pass with a running max"));
    WriteTextFileAtomic(
        knowledge / "generic-vector.md",
        Md("Vector loads", "[]", "[memory]", "float4 loads for bandwidth and softmax rows"));
    WriteTextFileAtomic(
        knowledge / "gemm-tiles.md",
        Md("Register tiles", "[gemm]", "[compute.fp32]", "register tiling of the FFMA loop"));
    WriteTextFileAtomic(
        knowledge / "anything.md",
        Md("Launch bounds", "[]", "[]", "occupancy against registers, bank conflicts"));
  }
  std::unique_ptr<KnowledgeBase> Open() { return OpenKnowledgeBase(db, knowledge); }
};

std::vector<std::string> Ids(const std::vector<KnowledgeEntry>& es) {
  std::vector<std::string> ids;
  for (const auto& e : es) ids.push_back(e.id);
  return ids;
}

LearnedWin Win(double parent_ms, double child_ms) {
  LearnedWin w;
  w.task = "04_softmax";
  w.op_class = "softmax";
  w.bottleneck = "memory.dram";
  w.arch = "sm_90";
  w.move = "Vector width 4";
  w.proposer = "llm";
  w.diagnosis = "narrow_loads";
  w.verified = true;
  w.measured = true;
  w.parent_ms = parent_ms;
  w.child_ms = child_ms;
  w.provenance = {{"run", "20260101-0000-abcd"}, {"node", 12}, {"gpu", "NVIDIA H200"}};
  return w;
}

TEST(KnowledgeBase, LoadsCuratedFilesButTheReadme) {
  Fixture f;
  auto kb = f.Open();
  EXPECT_EQ(Ids(kb->List()), (std::vector<std::string>{"anything", "gemm-tiles", "generic-vector",
                                                       "softmax-online"}));
  auto e = kb->Get("softmax-online");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->op_classes, std::vector<std::string>{"softmax"});
  EXPECT_EQ(e->body, "Body of Online softmax.");
  EXPECT_FALSE(kb->Get("README"));
}

TEST(KnowledgeBase, StructuredMatchRanksAboveText) {
  Fixture f;
  auto kb = f.Open();
  KnowledgeQuery q;
  q.op_class = "softmax";
  q.bottleneck = "memory.dram";
  q.text = "bank conflicts launch bounds occupancy";  // matches only the wildcard entry
  q.limit = 10;
  // The softmax entry matches op class and bottleneck, the vector entry only
  // the bottleneck, the wildcard nothing specific; gemm is excluded.
  EXPECT_EQ(Ids(kb->Retrieve(q)),
            (std::vector<std::string>{"softmax-online", "generic-vector", "anything"}));
  // Among equals, text decides.
  KnowledgeQuery t;
  t.text = "register tiling";
  t.limit = 2;
  EXPECT_EQ(Ids(kb->Retrieve(t)).front(), "gemm-tiles");
  EXPECT_EQ(kb->Retrieve(t).size(), 2u);
  EXPECT_EQ(Ids(kb->Search("softmax rows", 10)).size(), 2u);
  EXPECT_EQ(Ids(kb->Search("gemm", 10)), std::vector<std::string>{"gemm-tiles"});  // by its tags
}

// An arch list says where a technique is available: without text it ranks
// first, but a text match that runs anywhere comes before it.
TEST(KnowledgeBase, ArchSpecificEntriesRankAfterTextBeforeWildcards) {
  Fixture f;
  std::string hopper = Md("Same", "[]", "[]", "multicast tiles");
  hopper.replace(hopper.find("archs: []"), 9, "archs: [sm_90]");
  WriteTextFileAtomic(f.knowledge / "hopper-only.md", hopper);
  WriteTextFileAtomic(f.knowledge / "general.md", Md("Same", "[]", "[]", "multicast tiles"));
  auto kb = f.Open();
  KnowledgeQuery q;
  q.arch = "sm_90a";
  q.limit = 10;
  EXPECT_EQ(Ids(kb->Retrieve(q)).front(), "hopper-only");
  q.text = "bank conflicts";
  EXPECT_EQ(Ids(kb->Retrieve(q)).front(), "anything");
  q.text = "multicast";
  EXPECT_EQ(Ids(kb->Retrieve(q)).size(), 6u);  // every entry, whatever the text
  q.arch = "sm_80";
  q.text = "multicast";
  EXPECT_EQ(Ids(kb->Retrieve(q)).front(), "general");
  for (const auto& id : Ids(kb->Retrieve(q))) EXPECT_NE(id, "hopper-only");
}

TEST(KnowledgeBase, HostileTextNeverReachesFts5Raw) {
  Fixture f;
  auto kb = f.Open();
  for (std::string text : {"\"",
                           "'",
                           "a\"b",
                           "softmax\"",
                           "NOT",
                           "AND OR NOT",
                           "col:softmax",
                           "title:",
                           "-softmax",
                           "soft-max",
                           "*",
                           "softmax*",
                           "NEAR(a b)",
                           "(",
                           ")",
                           "{title}: x",
                           "^",
                           "'; DROP TABLE entries; --",
                           "\xff\xfe",
                           "bank_conflicts",
                           "",
                           "   "}) {
    EXPECT_NO_THROW(kb->Search(text, 5)) << text;
    KnowledgeQuery q;
    q.text = text;
    EXPECT_NO_THROW(kb->Retrieve(q)) << text;
  }
  EXPECT_EQ(Ids(kb->Search("soft-max: \"running max\"", 5)).front(), "softmax-online");
  EXPECT_EQ(kb->List().size(), 4u);
}

TEST(KnowledgeBase, AdmitRefusesWhatIsNotARealWin) {
  Fixture f;
  auto kb = f.Open();
  LearnedWin unverified = Win(1.0, 0.5);
  unverified.verified = false;
  LearnedWin unmeasured = Win(1.0, 0.5);
  unmeasured.measured = false;
  LearnedWin no_move = Win(1.0, 0.5);
  no_move.move = "  ";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    LearnedWin win;
    const char* reason;
  } cases[] = {{unverified, "not verified"},
               {unmeasured, "not measured"},
               {Win(1.0, 1.2), "not faster than its parent (0.833x)"},
               {Win(1.0, 1.0), "not faster than its parent (1.000x)"},
               {Win(1.0, 0.98), "within timing noise (1.020x"},
               {Win(1.0, 0.9701), "within timing noise"},
               {Win(0, 0.5), "no valid timing"},
               {Win(1.0, -1), "no valid timing"},
               {Win(nan, 0.5), "no valid timing"},
               {Win(1.0, std::numeric_limits<double>::infinity()), "no valid timing"},
               {no_move, "no move"}};
  for (const Case& c : cases) {
    Admission a = kb->Admit(c.win);
    EXPECT_FALSE(a.admitted) << c.reason;
    EXPECT_EQ(a.reason.rfind(c.reason, 0), 0u) << a.reason;
  }
  EXPECT_EQ(kb->List().size(), 4u);
  // Exactly at the margin is a win.
  EXPECT_TRUE(kb->Admit(Win(1.0, kMaxAdmitTimeRatio)).admitted);
}

TEST(KnowledgeBase, AdmitsARealWinWithProvenanceAndKeepsTheBetterGain) {
  Fixture f;
  auto kb = f.Open();
  Admission a = kb->Admit(Win(1.0, 0.8));
  ASSERT_TRUE(a.admitted) << a.reason;
  EXPECT_EQ(a.id, LearnedId(Win(1.0, 0.8)));
  EXPECT_EQ(a.id.rfind("learned-", 0), 0u);
  EXPECT_EQ(a.reason, "admitted as " + a.id + " (1.250x)");
  auto e = kb->Get(a.id);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->origin, "learned");
  EXPECT_DOUBLE_EQ(e->gain, 1.25);
  EXPECT_EQ(e->op_classes, std::vector<std::string>{"softmax"});
  EXPECT_EQ(e->bottlenecks, std::vector<std::string>{"memory.dram"});
  EXPECT_EQ(e->provenance["run"], "20260101-0000-abcd");
  EXPECT_EQ(e->provenance["node"], 12);
  EXPECT_EQ(e->provenance["gpu"], "NVIDIA H200");
  EXPECT_EQ(e->provenance["task"], "04_softmax");
  EXPECT_EQ(e->provenance["move"], "Vector width 4");
  EXPECT_EQ(e->provenance["proposer"], "llm");
  EXPECT_EQ(e->provenance["diagnosis"], "narrow_loads");
  EXPECT_DOUBLE_EQ(e->provenance["parent_ms"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(e->provenance["child_ms"].get<double>(), 0.8);

  // The same task and move (written differently) is one entry: a worse gain
  // is refused, a better one replaces the gain and the provenance.
  LearnedWin worse = Win(1.0, 0.9);
  worse.move = "vector  WIDTH 4";
  Admission w = kb->Admit(worse);
  EXPECT_FALSE(w.admitted);
  EXPECT_EQ(w.id, a.id);
  EXPECT_NE(w.reason.find("already learned"), std::string::npos) << w.reason;
  LearnedWin better = Win(1.0, 0.5);
  better.provenance["run"] = "run-2";
  Admission b = kb->Admit(better);
  EXPECT_TRUE(b.admitted) << b.reason;
  EXPECT_EQ(b.id, a.id);
  EXPECT_DOUBLE_EQ(kb->Get(a.id)->gain, 2.0);
  EXPECT_EQ(kb->Get(a.id)->provenance["run"], "run-2");
  EXPECT_EQ(kb->List().size(), 5u);
  // Another task is another entry.
  LearnedWin other = Win(1.0, 0.8);
  other.task = "unseen_02";
  EXPECT_NE(kb->Admit(other).id, a.id);
  EXPECT_EQ(kb->List().size(), 6u);
}

TEST(KnowledgeBase, LearnedEntriesWithHigherGainFirstAmongEquals) {
  Fixture f;
  auto kb = f.Open();
  LearnedWin small = Win(1.0, 0.9);
  small.move = "unroll 4";
  LearnedWin big = Win(1.0, 0.5);
  big.move = "unroll 8";
  ASSERT_TRUE(kb->Admit(small).admitted);
  ASSERT_TRUE(kb->Admit(big).admitted);
  KnowledgeQuery q;
  q.op_class = "softmax";
  q.bottleneck = "memory.dram";
  q.arch = "sm_90";
  q.limit = 3;
  std::vector<KnowledgeEntry> got = kb->Retrieve(q);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].id, LearnedId(big));  // op class + bottleneck + arch
  EXPECT_EQ(got[1].id, LearnedId(small));
  EXPECT_EQ(got[2].id, "softmax-online");
}

TEST(KnowledgeBase, PersistsAcrossReopenAndReloadsChangedCuratedFiles) {
  Fixture f;
  std::string learned;
  {
    auto kb = f.Open();
    learned = kb->Admit(Win(1.0, 0.8)).id;
  }
  WriteTextFileAtomic(f.knowledge / "gemm-tiles.md",
                      Md("Register tiles, revised", "[gemm]", "[compute]", "wider tiles"));
  fs::remove(f.knowledge / "anything.md");
  WriteTextFileAtomic(f.knowledge / "new-entry.md",
                      Md("New", "[scan]", "[]", "decoupled look-back"));
  auto kb = f.Open();
  EXPECT_TRUE(kb->Get(learned));
  EXPECT_EQ(kb->Get("gemm-tiles")->title, "Register tiles, revised");
  EXPECT_EQ(kb->Get("gemm-tiles")->bottlenecks, std::vector<std::string>{"compute"});
  EXPECT_FALSE(kb->Get("anything"));
  EXPECT_TRUE(kb->Get("new-entry"));
  EXPECT_EQ(Ids(kb->Search("wider", 5)), std::vector<std::string>{"gemm-tiles"});
  EXPECT_TRUE(kb->Search("bank conflicts occupancy", 5).empty());  // its words left with it
  // Opening without a knowledge folder keeps what is there.
  auto plain = OpenKnowledgeBase(f.db, {});
  EXPECT_EQ(plain->List().size(), 5u);
}

TEST(KnowledgeBase, PutAddsAnEntryAndRefusesABadOne) {
  Fixture f;
  auto kb = f.Open();
  KnowledgeEntry e =
      ParseKnowledgeMarkdown("my-trick", Md("Mine", "[pool]", "[]", "window in registers"));
  kb->Put(e);
  EXPECT_EQ(kb->Get("my-trick")->title, "Mine");
  EXPECT_EQ(Ids(kb->Search("window", 5)), std::vector<std::string>{"my-trick"});
  e.id = "Not An Id";
  EXPECT_THROW(kb->Put(e), Error);
  e.id = "ok";
  e.pitfalls = "";
  EXPECT_THROW(kb->Put(e), Error);
}

TEST(KnowledgeBase, ErrorsAreOneSentenceThatSaysWhatToDo) {
  Fixture f;
  WriteTextFileAtomic(f.knowledge / "broken.md", "---\ntitle: t\nop_class: [gemm]\n---\n");
  try {
    f.Open();
    FAIL() << "a broken entry opened";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("broken.md"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown key 'op_class'"), std::string::npos) << m;
  }
  EXPECT_THROW(OpenKnowledgeBase(f.db, f.dir / "missing"), Error);
  WriteTextFileAtomic(f.dir / "not-a-db", std::string(4096, 'x'));
  try {
    OpenKnowledgeBase(f.dir / "not-a-db", {});
    FAIL() << "a text file opened as a database";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a kopt knowledge base"), std::string::npos)
        << e.what();
  }
}

TEST(KnowledgeBase, RefusesOtherDatabasesAndNewerSchemas) {
  Fixture f;
  auto message = [](const fs::path& db) {
    try {
      OpenKnowledgeBase(db, {});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  };
  {
    sqlite::Db other(f.dir / "other.db");
    other.Exec("CREATE TABLE runs (id TEXT)", "test");
  }
  EXPECT_NE(message(f.dir / "other.db").find("holds another database"), std::string::npos);
  f.Open();
  {
    sqlite::Db db(f.db);
    db.Exec("PRAGMA user_version = 99", "test");
  }
  std::string newer = message(f.db);
  EXPECT_NE(newer.find("written by a newer kopt (schema 99"), std::string::npos) << newer;
}

// Several kopt processes may open a new knowledge base at once (parallel
// optimize runs): each finds the schema and the curated entries, none fails.
TEST(KnowledgeBase, ConcurrentFirstOpensAgree) {
  Fixture f;
  constexpr int kOpeners = 16;
  std::vector<std::string> errors(kOpeners);
  std::vector<std::size_t> sizes(kOpeners);
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i)
    threads.emplace_back([&, i] {
      try {
        sizes[i] = f.Open()->List().size();
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kOpeners; ++i) {
    EXPECT_EQ(errors[i], "");
    EXPECT_EQ(sizes[i], 4u);
  }
}

TEST(KnowledgeBase, DefaultPathFollowsKoptMemoryThenTheCacheFolder) {
  const char* old = std::getenv("KOPT_MEMORY");
  std::string saved = old ? old : "";
  unsetenv("KOPT_MEMORY");
  EXPECT_EQ(DefaultMemoryPath("/c"), fs::path("/c/memory.db"));
  setenv("KOPT_MEMORY", "/elsewhere/m.db", 1);
  EXPECT_EQ(DefaultMemoryPath("/c"), fs::path("/elsewhere/m.db"));
  if (old)
    setenv("KOPT_MEMORY", saved.c_str(), 1);
  else
    unsetenv("KOPT_MEMORY");
}

}  // namespace
}  // namespace kopt
