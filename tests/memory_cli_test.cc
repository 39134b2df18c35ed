// `kopt memory` end to end: the real binary on a real knowledge base file,
// with the repository's curated entries and a learned one admitted through
// the library, as `kopt optimize` would.
#include <gtest/gtest.h>

#include <map>

#include "core/json.h"
#include "core/subprocess.h"
#include "memory/knowledge.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct Memory {
  fs::path dir = testing::ScratchDir("memory-cli");
  fs::path db = dir / "memory.db";

  ProcessResult Kopt(std::vector<std::string> args, bool with_flags = true) const {
    std::vector<std::string> argv = {KOPT_BINARY, "memory"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (with_flags) {
      argv.insert(argv.end(), {"--knowledge", (testing::SourceDir() / "knowledge").string()});
    }
    ProcessOptions o;
    o.timeout_s = 60;
    o.env["KOPT_CACHE"] = (dir / "cache").string();
    o.env["KOPT_MEMORY"] = db.string();
    return RunProcess(argv, o);
  }
};

TEST(MemoryCli, ListsTheCuratedEntriesAsATableAndAsJson) {
  Memory m;
  ProcessResult r = m.Kopt({"list"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("online-softmax"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("op classes"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(m.db)) << "KOPT_MEMORY names the database";

  ProcessResult j = m.Kopt({"list", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  Json entries = Json::parse(j.out);
  EXPECT_GE(entries.size(), 40u);
  EXPECT_EQ(entries[0].value("origin", ""), "curated");
}

TEST(MemoryCli, ShowsAndSearches) {
  Memory m;
  ProcessResult show = m.Kopt({"show", "wgmma-tma-gemm"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(show.out.rfind("---\ntitle: Hopper GEMM", 0), 0u) << show.out;
  EXPECT_NE(show.out.find("archs: [sm_90]"), std::string::npos) << show.out;

  ProcessResult search = m.Kopt({"search", "bank_conflicts", "--limit", "3", "--json"});
  ASSERT_EQ(search.exit_code, 0) << search.err;
  Json found = Json::parse(search.out);
  ASSERT_FALSE(found.empty());
  EXPECT_LE(found.size(), 3u);
  EXPECT_EQ(found[0]["id"], "shared-memory-bank-conflicts");

  ProcessResult hostile = m.Kopt({"search", "\"unterminated AND -x: NEAR(", "*"});
  EXPECT_EQ(hostile.exit_code, 0) << hostile.err;

  ProcessResult missing = m.Kopt({"show", "no-such-entry"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("There is no knowledge entry 'no-such-entry'"), std::string::npos)
      << missing.err;
  EXPECT_NE(missing.err.find("kopt memory list"), std::string::npos) << missing.err;
}

TEST(MemoryCli, AddsAnEntryAndExportsEverythingIncludingLearned) {
  Memory m;
  fs::path file = m.dir / "my-trick.md";
  WriteTextFileAtomic(
      file,
      "---\ntitle: My trick\nop_classes: [pool]\nbottlenecks: []\narchs: []\n"
      "technique: Keep the window in registers across outputs.\napplies_when: Small windows.\n"
      "expected_effect: Fewer loads.\npitfalls: Register pressure.\n---\n\nDetails.\n");
  ProcessResult add = m.Kopt({"add", file.string()});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_NE(add.out.find("Added 'my-trick'"), std::string::npos) << add.out;

  {  // a win learned by a run
    auto kb = OpenKnowledgeBase(m.db, {});
    LearnedWin w;
    w.task = "04_softmax";
    w.op_class = "softmax";
    w.move = "vector width 4";
    w.verified = w.measured = true;
    w.parent_ms = 1.0;
    w.child_ms = 0.8;
    w.provenance = {{"run", "r1"}, {"node", 3}, {"gpu", "NVIDIA H200"}};
    ASSERT_TRUE(kb->Admit(w).admitted);
  }

  fs::path out = m.dir / "export";
  ProcessResult exp = m.Kopt({"export", "--out", out.string()});
  ASSERT_EQ(exp.exit_code, 0) << exp.err;
  EXPECT_NE(exp.out.find("(1 learned)"), std::string::npos) << exp.out;
  EXPECT_TRUE(fs::exists(out / "my-trick.md"));
  EXPECT_TRUE(fs::exists(out / "online-softmax.md"));
  int learned = 0;
  for (const auto& de : fs::directory_iterator(out)) {
    KnowledgeEntry e = ParseKnowledgeMarkdown(de.path().stem().string(), ReadTextFile(de.path()));
    if (e.origin != "learned") continue;
    ++learned;
    EXPECT_EQ(e.provenance["run"], "r1");
    EXPECT_DOUBLE_EQ(e.gain, 1.25);
  }
  EXPECT_EQ(learned, 1);

  ProcessResult listed = m.Kopt({"list"});
  EXPECT_NE(listed.out.find("learned 1.25x"), std::string::npos) << listed.out;
}

TEST(MemoryCli, MistakesAreOneSentenceThatSaysWhatToDo) {
  Memory m;
  ProcessResult curated_id =
      m.Kopt({"add", (testing::SourceDir() / "knowledge" / "online-softmax.md").string()});
  EXPECT_EQ(curated_id.exit_code, 0)
      << "adding the curated file itself is allowed: " << curated_id.err;

  fs::path clash = m.dir / "online-softmax.md";
  WriteTextFileAtomic(clash,
                      ReadTextFile(testing::SourceDir() / "knowledge" / "online-softmax.md"));
  ProcessResult r = m.Kopt({"add", clash.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("edit that file, or rename yours"), std::string::npos) << r.err;

  fs::path bad = m.dir / "bad.md";
  WriteTextFileAtomic(bad, "---\ntitle: t\nop_class: [gemm]\n---\n");
  r = m.Kopt({"add", bad.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown key 'op_class'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  r = m.Kopt({"list", "--knowledge", (m.dir / "nowhere").string()}, false);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no knowledge folder"), std::string::npos) << r.err;

  r = m.Kopt({}, false);
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

}  // namespace
}  // namespace kopt
