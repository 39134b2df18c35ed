// The curated entries in knowledge/: each parses, uses kopt's names for op
// classes and bottlenecks (so retrieval by structure finds it), and the
// whole set answers the questions the proposers ask.
#include <gtest/gtest.h>

#include <set>

#include "core/json.h"
#include "diagnose/roofline.h"
#include "memory/knowledge.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMinCuratedEntries = 40;

fs::path KnowledgeDir() { return testing::SourceDir() / "knowledge"; }

std::vector<KnowledgeEntry> Curated() {
  std::vector<KnowledgeEntry> out;
  for (const auto& de : fs::directory_iterator(KnowledgeDir())) {
    const fs::path& p = de.path();
    if (p.extension() != ".md" || p.filename() == "README.md") continue;
    out.push_back(ParseKnowledgeMarkdown(p.stem().string(), ReadTextFile(p)));
  }
  return out;
}

std::set<std::string> Names(const Json& vocabulary, const char* key) {
  std::set<std::string> names;
  for (const auto& [name, about] : vocabulary.at(key).items()) names.insert(name);
  return names;
}

TEST(CuratedKnowledge, EveryEntryParsesWithItsRequiredFieldsAndThereAreEnough) {
  std::vector<KnowledgeEntry> entries;
  ASSERT_NO_THROW(entries = Curated());
  EXPECT_GE(entries.size(), kMinCuratedEntries);
  for (const KnowledgeEntry& e : entries) {
    EXPECT_EQ(e.origin, "curated") << e.id;
    EXPECT_EQ(e.title.find('\n'), std::string::npos) << e.id << ": the title is one line";
    EXPECT_LE(e.title.size(), 80u) << e.id;
    EXPECT_GE(e.technique.size(), 40u) << e.id << ": a technique says what to do";
    EXPECT_FALSE(e.applies_when.empty()) << e.id;
    EXPECT_FALSE(e.expected_effect.empty()) << e.id;
    EXPECT_FALSE(e.pitfalls.empty()) << e.id;
    EXPECT_FALSE(e.body.empty()) << e.id << ": a body with the detail";
  }
}

TEST(CuratedKnowledge, EntriesUseOnlyTheVocabularysNames) {
  Json vocabulary = ReadJsonFile(KnowledgeDir() / "vocabulary.json");
  std::set<std::string> ops = Names(vocabulary, "op_classes");
  std::set<std::string> bottlenecks = Names(vocabulary, "bottlenecks");
  std::set<std::string> archs = Names(vocabulary, "archs");
  std::set<std::string> used_ops;
  for (const KnowledgeEntry& e : Curated()) {
    for (const auto& o : e.op_classes) {
      EXPECT_TRUE(ops.count(o)) << e.id << ": op class '" << o
                                << "' is not in knowledge/vocabulary.json";
      used_ops.insert(o);
    }
    for (const auto& b : e.bottlenecks)
      EXPECT_TRUE(bottlenecks.count(b))
          << e.id << ": bottleneck '" << b << "' is not in vocabulary.json";
    for (const auto& a : e.archs) EXPECT_TRUE(archs.count(a)) << e.id << ": arch '" << a << "'";
  }
  // Every op class has knowledge of its own.
  for (const auto& o : ops) EXPECT_TRUE(used_ops.count(o)) << "no entry for op class " << o;
}

// The vocabulary's bottlenecks are the roofline classifier's names (or their
// families), so a query built from a diagnosis report matches entries.
TEST(CuratedKnowledge, BottlenecksAreTheRooflineClassesAndTheirFamilies) {
  std::set<std::string> classes;
  for (BoundClass c : {BoundClass::kMemoryDram, BoundClass::kMemoryL2, BoundClass::kMemoryL1Shared,
                       BoundClass::kComputeFp32, BoundClass::kComputeTensor, BoundClass::kLatency,
                       BoundClass::kLaunchHost, BoundClass::kSmallGrid})
    classes.insert(BoundClassName(c));
  std::set<std::string> vocabulary =
      Names(ReadJsonFile(KnowledgeDir() / "vocabulary.json"), "bottlenecks");
  for (const std::string& b : vocabulary) {
    bool family = false;
    for (const std::string& c : classes) family |= c.rfind(b + ".", 0) == 0;
    EXPECT_TRUE(classes.count(b) || family) << b << " is no roofline class (diagnose/roofline.h)";
  }
  for (const std::string& c : classes)
    EXPECT_TRUE(vocabulary.count(c)) << c << " is missing from vocabulary.json";
}

// Each analysis tool's name appears in some entry, and searching for the
// name (as a proposer does with a diagnosis) finds such an entry first.
TEST(CuratedKnowledge, EveryDiagnosisFindsKnowledgeByItsName) {
  auto kb = OpenKnowledgeBase(testing::ScratchDir("curated") / "memory.db", KnowledgeDir());
  Json thresholds = ReadJsonFile(testing::SourceDir() / "data/diagnose/thresholds.json");
  int tools = 0;
  for (const auto& [tool, _] : thresholds.items()) {
    if (tool == "_about" || tool == "severity") continue;
    ++tools;
    std::set<std::string> naming;
    for (const KnowledgeEntry& e : Curated())
      if ((e.technique + e.applies_when + e.body).find(tool) != std::string::npos)
        naming.insert(e.id);
    EXPECT_FALSE(naming.empty()) << "no entry names the diagnosis " << tool;
    std::vector<KnowledgeEntry> found = kb->Search(tool, 3);
    EXPECT_TRUE(!found.empty() && naming.count(found.front().id))
        << "searching " << tool << " finds " << (found.empty() ? "nothing" : found.front().id);
  }
  EXPECT_GE(tools, 15);
}

TEST(CuratedKnowledge, RetrievalAnswersTypicalQuestions) {
  auto kb = OpenKnowledgeBase(testing::ScratchDir("curated") / "memory.db", KnowledgeDir());
  auto top = [&](KnowledgeQuery q, int n) {
    q.limit = n;
    std::vector<std::string> ids;
    for (const auto& e : kb->Retrieve(q)) ids.push_back(e.id);
    return ids;
  };
  auto has = [](const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  std::vector<std::string> softmax = top({"softmax", "memory.dram", "sm_90", "", 5}, 5);
  EXPECT_TRUE(has(softmax, "online-softmax")) << ::testing::PrintToString(softmax);
  std::vector<std::string> gemm =
      top({"gemm", "compute.tensor", "sm_90", "no_tensor_cores bf16", 5}, 5);
  EXPECT_TRUE(has(gemm, "wgmma-tma-gemm")) << ::testing::PrintToString(gemm);
  std::vector<std::string> strict =
      top({"gemm", "compute.fp32", "sm_90", "strict fp32 tf32 accuracy", 5}, 5);
  EXPECT_TRUE(has(strict, "3xtf32-split-precision")) << ::testing::PrintToString(strict);
  std::vector<std::string> banks =
      top({"gemm", "memory.l1_shared", "sm_90", "bank_conflicts", 3}, 3);
  EXPECT_TRUE(has(banks, "shared-memory-bank-conflicts")) << ::testing::PrintToString(banks);
  std::vector<std::string> launch = top({"model", "launch_host", "", "many_small_kernels", 5}, 5);
  EXPECT_TRUE(has(launch, "cuda-graphs")) << ::testing::PrintToString(launch);
  std::vector<std::string> scan = top({"scan", "", "sm_90", "", 5}, 5);
  EXPECT_TRUE(has(scan, "decoupled-lookback-scan")) << ::testing::PrintToString(scan);
}

}  // namespace
}  // namespace kopt
