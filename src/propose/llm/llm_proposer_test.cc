#include "propose/llm/llm_proposer.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "build/builder.h"
#include "core/error.h"
#include "memory/knowledge.h"
#include "task/task_loader.h"
#include "testing/llm_server.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;
using testing::LlmScriptedReply;
using testing::LlmTestServer;

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

std::string Py(const std::string& body) {
  return "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def "
         "forward(self, "
         "x):\n        return " +
         body + "\n";
}

std::string Reply(const std::string& move, const std::string& lang, const std::string& code) {
  return "Move: " + move + "\n\nOne call instead of a loop.\n\n```" + lang + "\n" + code + "```\n";
}

struct Fixture {
  LlmTestServer server;
  fs::path dir = testing::ScratchDir("llm-proposer");
  ProposerOptions options;
  TaskBundle bundle;
  ProposeContext ctx;
  Fixture() {
    unsetenv("KOPT_LLM");
    options.llm.model = "openai:test";
    options.llm.base_url = server.base_url() + "/v1";
    options.llm.api_key = "dummy-key";
    options.llm.max_retries = 0;
    options.prompts_dir = testing::SourceDir() / "data/llm/prompts";
    options.kernels_dir = testing::SourceDir() / "kernels";
    options.cache_dir = dir / "cache";
    options.knowledge_db = dir / "knowledge.db";
    fs::create_directories(dir / "cutlass/include/cute");
    WriteTextFileAtomic(dir / "cutlass/include/cute/tensor.hpp", "auto make_tensor();\n");
    options.cutlass_dir = dir / "cutlass";
    ctx.task = LoadTask(testing::SourceDir() / "python/tests/data/relu_sized.py");
    ctx.bundle = &bundle;
    ctx.arch = "sm_90";
  }
  std::unique_ptr<Proposer> Begun() {
    auto p = MakeProposer("llm", options);
    p->Begin(ctx);
    return p;
  }
};

TEST(LlmProposer, NothingConfiguredIsOneSentence) {
  Fixture f;
  f.options.llm = LlmConfig{};
  unsetenv("OPENAI_API_KEY");
  unsetenv("OPENAI_BASE_URL");
  unsetenv("ANTHROPIC_API_KEY");
  auto p = MakeProposer("llm", f.options);
  try {
    p->Begin(f.ctx);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(Has(e.what(), "KOPT_LLM")) << e.what();
  }
}

TEST(LlmProposer, ThePromptCarriesDiagnosesAndMemoryAndTheDetailRecordsIt) {
  Fixture f;
  {
    auto kb = OpenKnowledgeBase(f.options.knowledge_db, "");
    KnowledgeEntry e;
    e.id = "fewer-launches";
    e.title = "Fewer launches for tiny tensors";
    e.technique = "Replace a Python loop of small torch calls with one call over the whole tensor.";
    e.applies_when = "launch-bound forwards";
    e.expected_effect = "one launch instead of one per row";
    e.pitfalls = "none";
    kb->Put(e);
  }
  f.server.Script({LlmScriptedReply::OpenAi(Reply("one torch call", "python", Py("torch.relu(x)")),
                                            {}, 1200, 300)});
  auto p = f.Begun();
  EXPECT_TRUE(p->WantsDiagnoses());
  ParentView root;
  Diagnosis d;
  d.tool = "launch_overhead";
  d.severity = "critical";
  d.call_gain = 0.7;
  d.evidence = {{"launches_per_call", 33}};
  d.advice = "33 launches per call: the GPU idles between them.";
  root.diagnoses = {d};
  std::vector<Proposal> props = p->Propose(root, 1);
  ASSERT_EQ(props.size(), 1u);
  const Proposal& pr = props[0];
  EXPECT_EQ(pr.proposer, "llm");
  EXPECT_EQ(pr.move, "llm: one torch call");
  EXPECT_EQ(pr.expected, "One call instead of a loop.");
  EXPECT_EQ(pr.candidate.kind, CandidateKind::kHybrid);
  EXPECT_TRUE(Has(pr.candidate.name, "relu_sized[llm-")) << pr.candidate.name;
  EXPECT_EQ(pr.candidate.source, Py("torch.relu(x)"));

  // What was sent: the system prompt, then the prompt with both sections.
  auto sent = f.server.requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].json["model"], "test");
  EXPECT_TRUE(Has(sent[0].last_user_message, "launch_overhead (critical; up to 70%"));
  EXPECT_TRUE(Has(sent[0].last_user_message, "launches_per_call = 33"));
  EXPECT_TRUE(Has(sent[0].last_user_message, "[fewer-launches] Fewer launches for tiny tensors"));
  EXPECT_TRUE(Has(sent[0].body, "read_cutlass")) << "the CUTLASS tools are offered";
  EXPECT_TRUE(Has(sent[0].body, "search_knowledge"));
  // ...and what the detail records of it.
  const Json& det = pr.detail;
  EXPECT_EQ(det["ask"], "improve");
  EXPECT_EQ(det["prompt"]["text"], sent[0].last_user_message);
  EXPECT_EQ(det["prompt"]["chars"], sent[0].last_user_message.size());
  EXPECT_EQ(det["diagnoses"], Json::array({"launch_overhead"}));
  EXPECT_EQ(det["memory"], Json::array({"fewer-launches"}));
  EXPECT_EQ(det["tokens"]["input"], 1200);
  EXPECT_EQ(det["tokens"]["output"], 300);
  EXPECT_EQ(det["cached"], false);
  EXPECT_GT(det["reply_chars"].get<int>(), 50);
  EXPECT_EQ(det["repair_round"], 0);
  EXPECT_FALSE(Has(det.dump(), "dummy-key"));
}

TEST(ExpertProposer, ItsNotesNameTheMemoryEntriesThatMatchTheTask) {
  Fixture f;
  {
    auto kb = OpenKnowledgeBase(f.options.knowledge_db, "");
    KnowledgeEntry e;
    e.id = "vectorized-loads";
    e.title = "float4 loads";
    e.technique = "Load 16 bytes per thread.";
    e.applies_when = "memory-bound kernels";
    e.expected_effect = "up to 1.3x";
    e.pitfalls = "alignment";
    kb->Put(e);
  }
  f.options.moves_file = testing::SourceDir() / "data/expert/moves.json";
  auto p = MakeProposer("expert", f.options);
  p->Begin(f.ctx);
  std::string notes;
  for (const auto& n : p->Notes()) notes += n + "\n";
  EXPECT_TRUE(Has(notes, "memory: vectorized-loads")) << notes;
}

TEST(LlmProposer, AMoveAlreadyMadeFromTheParentIsNotTakenAgain) {
  Fixture f;
  f.server.Script(
      {LlmScriptedReply::OpenAi(Reply("one torch call", "python", Py("torch.relu(x)"))),
       LlmScriptedReply::OpenAi(Reply("One torch call.", "python", Py("x.clamp_min(0)"))),
       LlmScriptedReply::OpenAi("I have no further idea."),
       LlmScriptedReply::OpenAi("Still nothing.")});
  auto p = f.Begun();
  ParentView root;
  auto first = p->Propose(root, 1);
  ASSERT_EQ(first.size(), 1u);
  first[0].parent = 0;
  Measured m;
  m.time_ms.median = 0.01;
  p->Observe(1, first[0], m);
  root.tried_moves = {first[0].move};
  // The moves made are in the prompt; a reply repeating one is dropped.
  EXPECT_TRUE(p->Propose(root, 1).empty());
  auto sent = f.server.requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(Has(sent[1].last_user_message, "do not repeat them): llm: one torch call"));
  EXPECT_TRUE(Has(sent[1].last_user_message, "llm: one torch call"));
  // Replies without code close the node after three fruitless asks.
  EXPECT_TRUE(p->Propose(root, 1).empty());
  EXPECT_TRUE(p->Propose(root, 1).empty());
  EXPECT_TRUE(p->Propose(root, 1).empty());
  EXPECT_EQ(f.server.requests().size(), 4u);
}

TEST(LlmProposer, FailuresAreRepairedUpToTheCapThenNewIdeasAreAsked) {
  Fixture f;
  f.server.Script(
      {LlmScriptedReply::OpenAi(Reply("idea", "python", Py("torch.relu(x) + 1"))),
       LlmScriptedReply::OpenAi(Reply("repair: drop the +1", "python", Py("torch.relu(x) + 0.5"))),
       LlmScriptedReply::OpenAi(Reply("repair: no offset", "python", Py("torch.relu(x) * 1"))),
       LlmScriptedReply::OpenAi(Reply("another idea", "python", Py("x.clamp(min=0)")))});
  auto p = f.Begun();
  ParentView root;
  Proposal cur = p->Propose(root, 1).at(0);
  for (int node = 1; node <= 3; ++node) {
    cur.parent = 0;
    p->Observe(node, cur, Incorrect{{"output 0 differs: max error " + std::to_string(node)}});
    auto next = p->Propose(root, 1);
    ASSERT_EQ(next.size(), 1u) << node;
    auto sent = f.server.requests();
    const std::string& prompt = sent.back().last_user_message;
    if (node <= 2) {
      EXPECT_EQ(next[0].detail["ask"], "repair") << node;
      EXPECT_EQ(next[0].detail["repair_round"], node);
      EXPECT_EQ(next[0].detail["repair_of"], node);
      EXPECT_TRUE(Has(prompt, "max error " + std::to_string(node))) << prompt;
      EXPECT_TRUE(Has(prompt, "repair round " + std::to_string(node))) << prompt;
      EXPECT_TRUE(Has(next[0].move, "repair " + std::to_string(node) + " of node")) << next[0].move;
    } else {
      // The cap (2) is spent: a new idea, with the failures in the trajectory.
      EXPECT_EQ(next[0].detail["ask"], "improve");
      EXPECT_TRUE(Has(prompt, "max error 3")) << prompt;
    }
    cur = next[0];
  }
}

TEST(LlmProposer, ACompilerErrorGoesBackAndTheRepairCompiles) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  Fixture f;
  const std::string broken = R"(#include <kopt/abi.h>
__global__ void relu(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDimx + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}
extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  long n = kopt_numel(in[0]);
  relu<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>((const float*)in[0].data,
                                                         (float*)out[0].data, n);
  return 0;
}
)";
  std::string fixed = broken;
  fixed.replace(fixed.find("blockDimx"), 9, "blockDim.x");
  f.server.Script({LlmScriptedReply::OpenAi(Reply("a CUDA kernel", "cuda", broken)),
                   LlmScriptedReply::OpenAi(Reply("repair: blockDim.x", "cuda", fixed))
                       .Matching("What went wrong")});
  BuilderOptions bo;
  bo.cache_dir = f.dir / "nvcc";
  bo.include_dir = testing::SourceDir() / "include";
  bo.jobs = 2;
  auto builder = MakeNvccBuilder(bo);
  auto p = f.Begun();
  Proposal first = p->Propose(ParentView{}, 1).at(0);
  EXPECT_EQ(first.candidate.kind, CandidateKind::kCuda);
  BuildResult b1 = builder->Build({first.candidate.source, first.candidate.name, {}});
  ASSERT_FALSE(b1.ok);
  first.parent = 0;
  p->Observe(1, first, BuildFailed{b1.log});
  auto second = p->Propose(ParentView{}, 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].detail["ask"], "repair");
  std::string prompt = f.server.requests().back().last_user_message;
  EXPECT_TRUE(Has(prompt, "First error: ")) << prompt;
  EXPECT_TRUE(Has(prompt, "\"blockDimx\" is undefined")) << prompt;
  BuildResult b2 = builder->Build({second[0].candidate.source, second[0].candidate.name, {}});
  EXPECT_TRUE(b2.ok) << b2.log;
}

}  // namespace
}  // namespace kopt
