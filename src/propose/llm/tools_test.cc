#include "propose/llm/tools.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/json.h"
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

/// A small CUTLASS-shaped tree: include/cute/..., include/cutlass/..., and a
/// file beside include/ that no tool may read.
fs::path MakeTree() {
  fs::path root = testing::ScratchDir("cutlass-tree");
  fs::create_directories(root / "include/cute/atom");
  fs::create_directories(root / "include/cutlass/gemm");
  WriteTextFileAtomic(
      root / "include/cute/tensor.hpp",
      "#pragma once\nnamespace cute {\ntemplate <class T>\nauto make_tensor(T p);\n}\n");
  WriteTextFileAtomic(root / "include/cute/atom/copy_atom.hpp",
                      "#pragma once\nnamespace cute {\n// Tiled copies\ntemplate <class... Args>\n"
                      "auto make_tiled_copy(Args... args);\n}\n");
  WriteTextFileAtomic(root / "include/cutlass/gemm/gemm.h",
                      "#pragma once\nnamespace cutlass::gemm {}\n");
  WriteTextFileAtomic(root / "secret.txt", "OPENAI_API_KEY=sk-not-for-models\n");
  return root;
}

TEST(CutlassTree, SearchFindsFilesAndLines) {
  fs::path root = MakeTree();
  CutlassTree t(root / "include");
  std::string s = t.Search("make_tiled_copy");
  EXPECT_TRUE(Has(s, "cute/atom/copy_atom.hpp:5: auto make_tiled_copy(Args... args);")) << s;
  EXPECT_FALSE(Has(s, "tensor.hpp")) << s;
  EXPECT_TRUE(Has(t.Search("gemm"), "cutlass/gemm/gemm.h"));
  EXPECT_TRUE(Has(t.Search("no_such_api_anywhere"), "No file"));
}

TEST(CutlassTree, ReadsAreConfinedToTheTree) {
  fs::path root = MakeTree();
  CutlassTree t(root / "include");
  std::string r = t.Read("cute/tensor.hpp", 0);
  EXPECT_TRUE(Has(r, "make_tensor")) << r;
  EXPECT_TRUE(Has(t.Read("cute/tensor.hpp", 20, 10), "(chars 20..30 of"));
  for (const std::string& bad :
       {std::string("../secret.txt"), std::string("cute/../../secret.txt"),
        (root / "secret.txt").string(), std::string("/etc/passwd"), std::string("cute")}) {
    std::string out = t.Read(bad, 0);
    EXPECT_TRUE(Has(out, "is not a file of the CUTLASS tree")) << bad << ": " << out;
    EXPECT_FALSE(Has(out, "sk-not-for-models")) << bad;
  }
  // A link inside the tree that points out of it is refused too.
  fs::create_symlink(root / "secret.txt", root / "include/cute/leak.hpp");
  EXPECT_FALSE(Has(t.Read("cute/leak.hpp", 0), "sk-not-for-models"));
}

TEST(CutlassTree, FoundFromAUserPath) {
  fs::path root = MakeTree();
  std::string why;
  auto inc = FindCutlassInclude(root, "python3", &why);
  ASSERT_TRUE(inc) << why;
  EXPECT_EQ(fs::weakly_canonical(*inc), fs::weakly_canonical(root / "include"));
  EXPECT_FALSE(FindCutlassInclude(testing::ScratchDir("empty"), "python3", &why));
  EXPECT_TRUE(Has(why, "holds no cute/")) << why;
}

// Without a path, the tree comes from the installed nvidia-cutlass package:
// its cutlass_library module keeps the headers in source/include (the
// wheel's layout, checked against nvidia-cutlass 4.x from PyPI). A module of
// that layout on PYTHONPATH stands in for the installed wheel; the real
// interpreter imports it.
TEST(CutlassTree, FoundFromTheInstalledPythonPackage) {
  fs::path site = testing::ScratchDir("site-packages");
  fs::create_directories(site / "cutlass_library/source/include/cute");
  fs::create_directories(site / "cutlass_library/source/include/cutlass");
  WriteTextFileAtomic(site / "cutlass_library/__init__.py", "");
  const char* old = std::getenv("PYTHONPATH");
  std::string saved = old ? old : "";
  setenv("PYTHONPATH", site.c_str(), 1);
  std::string why;
  auto inc = FindCutlassInclude({}, "python3", &why);
  if (old)
    setenv("PYTHONPATH", saved.c_str(), 1);
  else
    unsetenv("PYTHONPATH");
  ASSERT_TRUE(inc) << why;
  EXPECT_EQ(fs::weakly_canonical(*inc),
            fs::weakly_canonical(site / "cutlass_library/source/include"));
}

LlmConfig ConfigFor(const std::string& provider, const LlmTestServer& server) {
  LlmConfig c;
  c.provider = provider;
  c.model = "test";
  c.base_url = provider == "openai" ? server.base_url() + "/v1" : server.base_url();
  c.api_key = "dummy-key";
  c.max_retries = 0;
  return c;
}

const char* kAnswer =
    "Move: tiled copy\n\n```cuda\nextern \"C\" int kopt_forward() { return 0; }\n```\n";

void RunsToolsThenAnswers(const std::string& provider) {
  fs::path root = MakeTree();
  CutlassTree tree(root / "include");
  LlmToolbox box(&tree, nullptr);
  LlmTestServer server;
  auto reply = [&](const std::string& text, std::vector<testing::ScriptedToolCall> calls) {
    return provider == "openai" ? LlmScriptedReply::OpenAi(text, std::move(calls))
                                : LlmScriptedReply::Anthropic(text, std::move(calls));
  };
  server.Script(
      {reply("Let me look.", {{"call_1", "search_cutlass", {{"query", "make_tiled_copy"}}}}),
       reply("", {{"call_2", "read_cutlass", {{"path", "cute/atom/copy_atom.hpp"}}},
                  {"call_3", "read_cutlass", {{"path", "../secret.txt"}}}}),
       reply(kAnswer, {})});
  LlmConfig config = ConfigFor(provider, server);
  LlmClient client(MakeLlmProvider(config), config, "", nullptr);
  LlmRequest req;
  req.model = "test";
  req.messages = {{"system", "You write kernels.", {}, ""},
                  {"user", "Write a copy kernel.", {}, ""}};
  ToolLoopResult r = RunToolLoop(client, req, &box, 4);
  ASSERT_TRUE(r.result.reply) << r.result.error->message;
  EXPECT_EQ(r.result.reply->text, kAnswer);
  EXPECT_EQ(r.rounds, 3);
  ASSERT_EQ(r.calls.size(), 3u) << r.calls.dump();
  EXPECT_EQ(r.calls[0]["name"], "search_cutlass");
  EXPECT_EQ(r.calls[2]["arguments"]["path"], "../secret.txt");
  EXPECT_EQ(r.usage.output_tokens, 60);

  std::vector<testing::LlmRecordedRequest> sent = server.requests();
  ASSERT_EQ(sent.size(), 3u);
  // The tools are offered in the provider's own format.
  std::string first = sent[0].json.dump();
  EXPECT_TRUE(Has(first, "search_cutlass") && Has(first, "read_cutlass")) << first;
  EXPECT_FALSE(Has(first, "search_knowledge")) << "no knowledge base was given";
  // The answers go back: the search's hit, the file's text, the refusal.
  std::string second = sent[1].json.dump();
  EXPECT_TRUE(Has(second, "call_1")) << second;
  EXPECT_TRUE(Has(second, "copy_atom.hpp:5")) << second;
  std::string third = sent[2].json.dump();
  EXPECT_TRUE(Has(third, "auto make_tiled_copy(Args... args);")) << third;
  EXPECT_TRUE(Has(third, "is not a file of the CUTLASS tree")) << third;
  EXPECT_FALSE(Has(third, "sk-not-for-models")) << third;
  if (provider == "openai") {
    EXPECT_TRUE(Has(third, "\"role\":\"tool\"")) << third;
    EXPECT_TRUE(Has(third, "\"tool_call_id\":\"call_3\"")) << third;
  } else {
    EXPECT_TRUE(Has(third, "tool_result")) << third;
    EXPECT_TRUE(Has(third, "\"tool_use_id\":\"call_3\"")) << third;
  }
}

TEST(ToolLoop, OpenAiToolCallsAreAnsweredUntilTheModelWrites) { RunsToolsThenAnswers("openai"); }

TEST(ToolLoop, AnthropicToolCallsAreAnsweredUntilTheModelWrites) {
  RunsToolsThenAnswers("anthropic");
}

TEST(ToolLoop, TheLastRoundOffersNoTools) {
  fs::path root = MakeTree();
  CutlassTree tree(root / "include");
  LlmToolbox box(&tree, nullptr);
  LlmTestServer server;
  server.Script({LlmScriptedReply::OpenAi("", {{"c1", "search_cutlass", {{"query", "tensor"}}}}),
                 LlmScriptedReply::OpenAi(kAnswer)});
  LlmConfig config = ConfigFor("openai", server);
  LlmClient client(MakeLlmProvider(config), config, "", nullptr);
  LlmRequest req;
  req.model = "test";
  req.messages = {{"user", "Write a kernel.", {}, ""}};
  ToolLoopResult r = RunToolLoop(client, req, &box, 1);
  ASSERT_TRUE(r.result.reply);
  EXPECT_EQ(r.rounds, 2);
  auto sent = server.requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(sent[0].json.contains("tools"));
  EXPECT_FALSE(sent[1].json.contains("tools") && !sent[1].json["tools"].empty()) << sent[1].body;
  EXPECT_TRUE(Has(sent[1].body, "No more tool calls")) << sent[1].body;
}

}  // namespace
}  // namespace kopt
