// `kopt optimize --proposer llm` end to end through the binary on the CPU
// worker, against a scripted model on a loopback HTTP server: a tool call, a
// candidate the verifier rejects, its repair with the verifier's words in the
// prompt, the repaired candidate verified and measured; the prompts stored in
// the run, and the API key nowhere in the store.
#include <gtest/gtest.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "store/run_store.h"
#include "testing/llm_server.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;
using testing::LlmScriptedReply;
using testing::LlmTestServer;

constexpr const char* kKey = "sk-kopt-test-0123456789abcdef";

ProcessResult Kopt(std::vector<std::string> args, const fs::path& cache) {
  args.insert(args.begin(), KOPT_BINARY);
  ProcessOptions o;
  o.timeout_s = 600;
  o.env["KOPT_CACHE"] = cache.string();
  o.env["KOPT_LLM"] = "";
  o.env["KOPT_MEMORY"] = "";
  o.env["OPENAI_BASE_URL"] = "";
  o.env["OPENAI_API_KEY"] = kKey;
  return RunProcess(args, o);
}

std::string ModelNew(const std::string& expr) {
  return "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
         "    def forward(self, x):\n        return " +
         expr + "\n";
}

std::string Reply(const std::string& move, const std::string& code) {
  return "Move: " + move + "\n\nThe same ReLU without the loop.\n\n```python\n" + code + "```\n";
}

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

/// A small task whose reference is slow on purpose (one torch call per row),
/// so a one-call ModelNew beats it clearly even on the CPU's noisy clock.
fs::path RowReluTask(const fs::path& dir) {
  fs::path task = dir / "row_relu.py";
  WriteTextFileAtomic(task, R"(import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU one row at a time: 256 small calls."""

    def forward(self, x):
        return torch.stack([torch.relu(r) for r in x])


batch_size = 256
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
)");
  return task;
}

TEST(LlmCli, AScriptedModelIsRepairedVerifiedAndItsPromptsStored) {
  fs::path dir = testing::ScratchDir("llm-cli");
  fs::path store_path = dir / "runs.db";
  LlmTestServer server;
  server.Script({
      // First the model looks in kopt's knowledge base, then writes a wrong candidate.
      LlmScriptedReply::OpenAi("", {{"call_1", "search_knowledge", {{"query", "elementwise"}}}}),
      LlmScriptedReply::OpenAi(Reply("relu plus a bias", ModelNew("torch.relu(x) + 1.0"))),
      // The repair prompt carries the verifier's reasons: the fix verifies.
      LlmScriptedReply::OpenAi(Reply("repair: no bias", ModelNew("torch.relu(x)")))
          .Matching("What went wrong"),
      LlmScriptedReply::OpenAi(Reply("clamp", ModelNew("x.clamp(min=0.0)"))),
  });
  ProcessResult r = Kopt({"optimize",
                          RowReluTask(dir).string(),
                          "--proposer",
                          "llm",
                          "--llm",
                          "openai:test",
                          "--llm-base-url",
                          server.base_url() + "/v1",
                          "--device",
                          "cpu",
                          "--budget",
                          "2",
                          "--pipeline",
                          "1",
                          "--max-seconds",
                          "0.05",
                          "--finalist-seconds",
                          "0.1",
                          "--no-compile",
                          "--store",
                          store_path.string()},
                         dir / "cache");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // The win over the reference was offered to long-term memory and kept.
  EXPECT_TRUE(Has(r.out, "memory     1 of 1 win(s) over their parent admitted")) << r.out;

  // The model was asked with the key, over the tool loop, and for a repair.
  auto sent = server.requests();
  ASSERT_GE(sent.size(), 3u) << r.out << r.err;
  EXPECT_EQ(sent[0].headers["authorization"], std::string("Bearer ") + kKey);
  EXPECT_TRUE(Has(sent[0].body, "search_knowledge")) << sent[0].body;
  EXPECT_TRUE(Has(sent[1].body, "call_1")) << "the tool's answer went back";
  EXPECT_TRUE(Has(sent[2].last_user_message, "# Repair: task row_relu"));

  auto store = MakeSqliteRunStore(store_path);
  auto runs = store->ListRuns(1);
  ASSERT_EQ(runs.size(), 1u);
  const std::string run = runs[0].run.id;
  std::map<int, NodeRecord> nodes;
  for (auto& n : store->ListNodes(run, 0)) nodes[n.id] = n;
  std::map<int, OutcomeRecord> outcomes;
  for (auto& o : store->ListOutcomes(run, 0)) outcomes[o.node] = o;

  const NodeRecord* wrong = nullptr;
  const NodeRecord* repaired = nullptr;
  for (const auto& [id, n] : nodes) {
    if (n.proposer != "llm") continue;
    if (n.detail.value("ask", "") == "improve" && !wrong) wrong = &n;
    if (n.detail.value("ask", "") == "repair") repaired = &n;
  }
  ASSERT_TRUE(wrong && repaired) << r.out << r.err;
  EXPECT_EQ(outcomes[wrong->id].verdict, "incorrect");
  // The repair: verified, measured, and faster than the reference.
  ASSERT_EQ(outcomes[repaired->id].verdict, "measured") << outcomes[repaired->id].outcome.dump();
  ASSERT_TRUE(outcomes[repaired->id].speedup);
  EXPECT_GT(*outcomes[repaired->id].speedup, 1.0);
  EXPECT_EQ(repaired->detail["repair_of"], wrong->id);

  // The prompts are in the run: full text, sizes, what sections they had.
  const Json& p1 = wrong->detail["prompt"];
  std::string text1 = p1["text"];
  EXPECT_EQ(p1["chars"], text1.size());
  EXPECT_GT(text1.size(), 2000u);
  EXPECT_TRUE(Has(text1, "## What the profile of the parent says"));
  EXPECT_TRUE(p1["sections"].contains("diagnoses"));
  EXPECT_TRUE(Has(text1, "## Knowledge that matches this task\n\n- ["))
      << "curated memory matched the task";
  EXPECT_FALSE(wrong->detail["memory"].empty());
  EXPECT_EQ(wrong->detail["tool_calls"][0]["name"], "search_knowledge");
  std::string text2 = repaired->detail["prompt"]["text"];
  EXPECT_TRUE(Has(text2, "torch.relu(x) + 1.0")) << "the failed source";
  EXPECT_TRUE(Has(text2, "the verifier rejected it")) << text2;
  EXPECT_EQ(text2, sent[2].last_user_message);

  // The key is nowhere in the store (database and its write-ahead log).
  store.reset();
  for (const fs::path& f : {store_path, fs::path(store_path.string() + "-wal")}) {
    if (!fs::exists(f)) continue;
    std::string bytes = ReadTextFile(f);
    EXPECT_FALSE(Has(bytes, kKey)) << f;
  }
  r = Kopt({"show", run, "--store", store_path.string()}, dir / "cache");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "repair 1 of node")) << r.out;
  EXPECT_FALSE(Has(r.out, kKey));

  // --resume reaches the same model without the --llm flags (the run keeps
  // the model and the server's address; the key comes from the
  // environment): the search asks the model again.
  const std::size_t before = server.requests().size();
  r = Kopt({"optimize", "--resume", run, "--store", store_path.string(), "--budget", "3",
            "--device", "cpu"},
           dir / "cache");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(Has(r.out + r.err, "no model is configured")) << r.out << r.err;
  EXPECT_GT(server.requests().size(), before) << r.out << r.err;
}

TEST(LlmCli, NoModelConfiguredIsOneSentence) {
  fs::path dir = testing::ScratchDir("llm-cli-none");
  ProcessResult r =
      Kopt({"optimize", (testing::SourceDir() / "python/tests/data/relu_sized.py").string(),
            "--proposer", "llm", "--device", "cpu", "--store", (dir / "runs.db").string()},
           dir / "cache");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(Has(r.err, "set KOPT_LLM and OPENAI_API_KEY, or pass --llm")) << r.err;
}

}  // namespace
}  // namespace kopt
