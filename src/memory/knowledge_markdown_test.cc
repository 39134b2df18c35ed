#include <gtest/gtest.h>

#include "core/error.h"
#include "memory/knowledge.h"

namespace kopt {
namespace {

const char* kEntry = R"md(---
title: Vectorized loads
# a comment line
op_classes: [elementwise, reduce]
bottlenecks:
  - memory.dram
archs: []
technique: Load 16 bytes per thread
  with float4.
applies_when: "The rows are 16-byte aligned: the last dim is a multiple of 4."
expected_effect: Up to 1.3x on narrow-load kernels.
pitfalls: Misaligned tails need a scalar loop.
---

# Body

A code sketch.
)md";

TEST(KnowledgeMarkdown, ParsesFrontMatterListsContinuationsAndBody) {
  KnowledgeEntry e = ParseKnowledgeMarkdown("vector-loads", kEntry);
  EXPECT_EQ(e.id, "vector-loads");
  EXPECT_EQ(e.origin, "curated");
  EXPECT_EQ(e.title, "Vectorized loads");
  EXPECT_EQ(e.op_classes, (std::vector<std::string>{"elementwise", "reduce"}));
  EXPECT_EQ(e.bottlenecks, (std::vector<std::string>{"memory.dram"}));
  EXPECT_TRUE(e.archs.empty());
  EXPECT_EQ(e.technique, "Load 16 bytes per thread\nwith float4.");
  EXPECT_EQ(e.applies_when, "The rows are 16-byte aligned: the last dim is a multiple of 4.");
  EXPECT_EQ(e.body, "# Body\n\nA code sketch.");
}

TEST(KnowledgeMarkdown, RoundTripsThroughTheWriterWithLearnedFields) {
  KnowledgeEntry e = ParseKnowledgeMarkdown("vector-loads", kEntry);
  e.origin = "learned";
  e.gain = 1.25;
  e.provenance = {{"run", "r1"}, {"node", 7}};
  e.technique = "line one\n\nline three";
  KnowledgeEntry back = ParseKnowledgeMarkdown("vector-loads", KnowledgeToMarkdown(e));
  EXPECT_EQ(ToJson(back), ToJson(e));
}

TEST(KnowledgeMarkdown, RefusesBadEntriesWithTheLine) {
  auto error_of = [](const std::string& id, const std::string& text) {
    try {
      ParseKnowledgeMarkdown(id, text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("parsed");
  };
  EXPECT_NE(error_of("x", "no front matter").find("'---'"), std::string::npos);
  EXPECT_NE(error_of("x", "---\ntitle: t\n").find("closing"), std::string::npos);
  std::string typo = error_of("x", "---\ntitle: t\nop_class: [gemm]\n---\n");
  EXPECT_NE(typo.find("line 3"), std::string::npos) << typo;
  EXPECT_NE(typo.find("unknown key 'op_class'"), std::string::npos) << typo;
  std::string missing =
      error_of("x", "---\ntitle: t\ntechnique: a\napplies_when: b\nexpected_effect: c\n---\n");
  EXPECT_NE(missing.find("'pitfalls'"), std::string::npos) << missing;
  EXPECT_NE(error_of("Bad Id", std::string(kEntry)).find("lowercase"), std::string::npos);
  EXPECT_NE(error_of("x", "---\ntitle: t\ntitle: u\n---\n").find("twice"), std::string::npos);
  EXPECT_NE(error_of("x", "---\ntitle: t\narchs: sm_90\n---\n").find("[a, b]"), std::string::npos);
}

}  // namespace
}  // namespace kopt
