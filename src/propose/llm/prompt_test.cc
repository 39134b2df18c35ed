#include "propose/llm/prompt.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "testing/paths.h"

namespace kopt {
namespace {

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

PromptTemplates Templates() {
  return LoadPromptTemplates(testing::SourceDir() / "data/llm/prompts");
}

Diagnosis Uncoalesced() {
  Diagnosis d;
  d.tool = "uncoalesced_global";
  d.severity = "critical";
  d.estimated_gain = 0.6;
  d.call_gain = 0.55;
  d.kernel = "relu_kernel";
  d.evidence = {{"sectors_per_request", 16.0}, {"dram__throughput.pct", 21.5}};
  d.advice =
      "Each warp's loads touch 16 sectors: make consecutive threads read consecutive floats.";
  d.suggested_moves = {"coalesce", "vectorize"};
  return d;
}

KnowledgeEntry Float4() {
  KnowledgeEntry e;
  e.id = "vectorized-loads";
  e.title = "Vectorized global loads (float4)";
  e.technique = "Load 16 bytes per thread with float4 when the pointer is 16-byte aligned.";
  e.applies_when = "memory-bound elementwise kernels";
  e.expected_effect = "up to 1.3x on DRAM-bound kernels";
  e.pitfalls = "misaligned tails need a scalar loop";
  return e;
}

PromptInputs Inputs() {
  PromptInputs in;
  in.task.name = "relu_sized";
  in.task_source =
      "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n";
  in.arch = "sm_90";
  in.parent = Candidate{CandidateKind::kCuda, {}, "__global__ void relu_kernel() {}\n", "relu[v1]"};
  Measured m;
  m.time_ms.median = 0.02;
  in.parent_outcome = m;
  in.diagnoses = {Uncoalesced()};
  in.memory = {Float4()};
  in.trajectory = "best so far: relu[v1] 1.40x eager\nfailed (incorrect): tiles of 64";
  in.tried_moves = {"llm: tiles of 64"};
  return in;
}

TEST(Prompt, TheProposePromptFillsEverySlotWithDiagnosesAndMemory) {
  PromptTemplates t = Templates();
  RenderedPrompt p = RenderProposePrompt(t, Inputs());
  EXPECT_TRUE(p.unfilled.empty()) << p.unfilled.front();
  EXPECT_FALSE(Has(p.text, "{{")) << p.text;
  EXPECT_TRUE(Has(p.text, "# Task relu_sized"));
  EXPECT_TRUE(Has(p.text, "return torch.relu(x)"));
  EXPECT_TRUE(Has(p.text, "precision strict"));  // the contract
  EXPECT_TRUE(Has(p.text, "Target: sm_90"));
  // The diagnosis in words, with its evidence and moves.
  EXPECT_TRUE(Has(p.text, "uncoalesced_global (critical; up to 55% of the call's time"));
  EXPECT_TRUE(Has(p.text, "sectors_per_request = 16"));
  EXPECT_TRUE(Has(p.text, "Suggested moves: coalesce, vectorize"));
  // The memory entry, the trajectory, the moves not to repeat, the ABI.
  EXPECT_TRUE(Has(p.text, "[vectorized-loads] Vectorized global loads"));
  EXPECT_TRUE(Has(p.text, "misaligned tails need a scalar loop"));
  EXPECT_TRUE(Has(p.text, "failed (incorrect): tiles of 64"));
  EXPECT_TRUE(Has(p.text, "do not repeat them): llm: tiles of 64"));
  EXPECT_TRUE(Has(p.text, "extern \"C\" int kopt_forward"));
  EXPECT_TRUE(Has(p.text, "kopt.load_cuda"));
  EXPECT_TRUE(Has(p.text, "__global__ void relu_kernel"));
  EXPECT_EQ(p.sections["diagnoses"]["cut"], false);
  EXPECT_GT(p.sections["memory"]["chars"].get<int>(), 100);
}

TEST(Prompt, WithoutProfileOrMemoryTheSectionsSaySo) {
  PromptInputs in = Inputs();
  in.diagnoses.clear();
  in.memory.clear();
  in.parent.reset();
  in.parent_outcome.reset();
  RenderedPrompt p = RenderProposePrompt(Templates(), in);
  EXPECT_TRUE(Has(p.text, "(not profiled: no findings)"));
  EXPECT_TRUE(Has(p.text, "(no entry matched)"));
  EXPECT_TRUE(Has(p.text, "(the reference Model above"));
}

TEST(Prompt, CapsAndTheBudgetAreHonoured) {
  PromptInputs in = Inputs();
  std::string huge;
  while (huge.size() < 200000)
    huge += "    y[i] = fmaxf(x[i], 0.f);  // one line of a long kernel\n";
  in.parent->source = huge;
  in.task_source = huge;
  PromptLimits l;
  l.budget_chars = 30000;
  RenderedPrompt p = RenderProposePrompt(Templates(), in, l);
  EXPECT_LE(p.text.size(), l.budget_chars);
  EXPECT_EQ(p.sections["parent"]["cut"], true);
  EXPECT_EQ(p.sections["task_source"]["cut"], true);
  EXPECT_TRUE(Has(p.text, "more chars cut]"));
  // What matters most survives the cut.
  EXPECT_TRUE(Has(p.text, "uncoalesced_global"));
  EXPECT_TRUE(Has(p.text, "[vectorized-loads]"));
  EXPECT_TRUE(Has(p.text, "precision strict"));
}

TEST(Prompt, TheRepairPromptCarriesTheCompilersFirstErrorAndTheRound) {
  PromptInputs in = Inputs();
  in.parent_outcome = BuildFailed{
      "kernel.cu(12): error: identifier \"blockDimx\" is undefined\n1 error detected\n"};
  in.repair_round = 1;
  RenderedPrompt p = RenderRepairPrompt(Templates(), in);
  EXPECT_TRUE(p.unfilled.empty()) << p.unfilled.front();
  EXPECT_TRUE(Has(p.text, "failed (build_failed), repair round 1\nof 2"));
  EXPECT_TRUE(Has(p.text, "First error: kernel.cu(12): error: identifier \"blockDimx\""));
  EXPECT_TRUE(Has(p.text, "```cuda\n__global__ void relu_kernel"));

  in.parent_outcome = Incorrect{{"output 0 differs from the reference: max error 1.0 at [3, 7]"}};
  p = RenderRepairPrompt(Templates(), in);
  EXPECT_TRUE(Has(p.text, "the verifier rejected it:\n- output 0 differs"));
}

TEST(Prompt, RenderPromptReportsUnfilledSlotsAndFillsRepeatedOnes) {
  RenderedPrompt p =
      RenderPrompt("{{a}} and {{b}} and {{a}} {{c}}", {{"a", "X", 10, 5}, {"b", "Y", 10, 5}}, 1000);
  EXPECT_EQ(p.text, "X and Y and X ");
  ASSERT_EQ(p.unfilled.size(), 1u);
  EXPECT_EQ(p.unfilled[0], "c");
  p = RenderPrompt("[{{a}}]", {{"a", std::string(50, 'z'), 20, 5}}, 1000);
  EXPECT_EQ(p.sections["a"]["cut"], true);
  EXPECT_LE(p.text.size(), 22u);
}

TEST(Prompt, AMissingTemplateIsOneSentence) {
  try {
    LoadPromptTemplates(testing::ScratchDir("no-prompts"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(Has(e.what(), "system.md")) << e.what();
  }
}

}  // namespace
}  // namespace kopt
