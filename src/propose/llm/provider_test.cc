// The providers against a real HTTP server on loopback (tests/testing/
// llm_server.h): what they send, what they make of each kind of reply, and
// that a key never shows in an error.
#include "propose/llm/provider.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/error.h"
#include "propose/llm/client.h"
#include "testing/llm_server.h"
#include "testing/paths.h"

namespace kopt {
namespace {

using testing::LlmScriptedReply;
using testing::LlmTestServer;
using testing::ScriptedToolCall;
using namespace std::chrono_literals;

LlmConfig ServerConfig(const std::string& provider, const LlmTestServer& server,
                       const std::string& key = "sk-test-key") {
  LlmConfig c;
  c.provider = provider;
  c.model = "test-model";
  c.base_url = provider == "openai" ? server.base_url() + "/v1" : server.base_url();
  c.api_key = key;
  c.timeout = 5s;
  return c;
}

LlmRequest Ask(const std::string& text) {
  LlmRequest r;
  r.model = "test-model";
  r.messages = {{"system", "You write CUDA kernels.", {}, ""}, {"user", text, {}, ""}};
  r.max_tokens = 1000;
  return r;
}

// A request that went through one tool round trip, with a tool on offer.
LlmRequest AskWithToolHistory() {
  LlmRequest r = Ask("find the GEMM");
  r.messages.push_back(
      {"assistant", "Let me look.", {{"call_7", "search", Json{{"query", "gemm"}}}}, ""});
  r.messages.push_back({"tool", "cute/gemm.hpp:12", {}, "call_7"});
  r.tools = {{"search", "Searches the CUTLASS tree.",
              Json{{"type", "object"}, {"properties", {{"query", {{"type", "string"}}}}}}}};
  return r;
}

// --- openai ---

TEST(OpenAiProvider, StreamsTextAndCountsUsage) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::OpenAi("__global__ void k() {}", {}, 12, 34)});
  auto provider = MakeLlmProvider(ServerConfig("openai", server));
  LlmResult result = provider->Complete(Ask("write a kernel"));
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(result.reply->text, "__global__ void k() {}");
  EXPECT_EQ(result.reply->stop_reason, "stop");
  EXPECT_EQ(result.reply->usage.input_tokens, 12);
  EXPECT_EQ(result.reply->usage.output_tokens, 34);

  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto& sent = requests[0];
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.path, "/v1/chat/completions");
  EXPECT_EQ(sent.headers.at("authorization"), "Bearer sk-test-key");
  EXPECT_EQ(sent.json["model"], "test-model");
  EXPECT_EQ(sent.json["stream"], true);
  EXPECT_EQ(sent.json["stream_options"]["include_usage"], true);
  EXPECT_EQ(sent.json["max_tokens"], 1000);
  ASSERT_EQ(sent.json["messages"].size(), 2u);
  EXPECT_EQ(sent.json["messages"][0]["role"], "system");
  EXPECT_EQ(sent.json["messages"][1]["content"], "write a kernel");
  EXPECT_EQ(sent.last_user_message, "write a kernel");
}

TEST(OpenAiProvider, AssemblesToolCallsSplitAcrossChunks) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::OpenAi(
      "", {{"call_1", "search", Json{{"query", "tma copy"}, {"limit", 5}}},
           {"call_2", "read_file", Json{{"path", "include/cute/atom/copy_atom.hpp"}}}})});
  auto provider = MakeLlmProvider(ServerConfig("openai", server));
  LlmResult result = provider->Complete(AskWithToolHistory());
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(result.reply->stop_reason, "tool_calls");
  ASSERT_EQ(result.reply->tool_calls.size(), 2u);
  EXPECT_EQ(result.reply->tool_calls[0].id, "call_1");
  EXPECT_EQ(result.reply->tool_calls[0].name, "search");
  EXPECT_EQ(result.reply->tool_calls[0].arguments, (Json{{"query", "tma copy"}, {"limit", 5}}));
  EXPECT_EQ(result.reply->tool_calls[1].name, "read_file");
  EXPECT_EQ(result.reply->tool_calls[1].arguments["path"], "include/cute/atom/copy_atom.hpp");

  // The history went out in OpenAI's shape.
  const Json body = server.requests().at(0).json;
  const Json& assistant = body["messages"][2];
  EXPECT_EQ(assistant["role"], "assistant");
  EXPECT_EQ(assistant["tool_calls"][0]["id"], "call_7");
  EXPECT_EQ(assistant["tool_calls"][0]["type"], "function");
  EXPECT_EQ(Json::parse(assistant["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            (Json{{"query", "gemm"}}));
  EXPECT_EQ(body["messages"][3]["role"], "tool");
  EXPECT_EQ(body["messages"][3]["tool_call_id"], "call_7");
  EXPECT_EQ(body["tools"][0]["type"], "function");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "search");
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["type"], "object");
}

TEST(OpenAiProvider, ReadsANonStreamJsonReply) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::JsonBody(
      {{"object", "chat.completion"},
       {"choices",
        {{{"index", 0},
          {"finish_reason", "length"},
          {"message",
           {{"role", "assistant"},
            {"content", "partial"},
            {"tool_calls",
             {{{"id", "c9"},
               {"type", "function"},
               {"function", {{"name", "grep"}, {"arguments", "{\"q\":\"x\"}"}}}}}}}}}}},
       {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 4}}}})});
  LlmResult result = MakeLlmProvider(ServerConfig("openai", server))->Complete(Ask("hi"));
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(result.reply->text, "partial");
  EXPECT_EQ(result.reply->stop_reason, "length");
  ASSERT_EQ(result.reply->tool_calls.size(), 1u);
  EXPECT_EQ(result.reply->tool_calls[0].arguments, (Json{{"q", "x"}}));
  EXPECT_EQ(result.reply->usage.output_tokens, 4);
}

TEST(OpenAiProvider, ArgumentsThatAreNotJsonStayAsText) {
  LlmTestServer server;
  LlmScriptedReply reply = LlmScriptedReply::OpenAi("");
  // Before the finish chunk: one call whose arguments, in two pieces, are not JSON.
  auto piece = [](const Json& call) {
    return "data: " +
           Json{{"choices", {{{"index", 0}, {"delta", {{"tool_calls", {call}}}}}}}}.dump() + "\n\n";
  };
  auto at = reply.chunks.end() - 3;
  at = reply.chunks.insert(at, piece({{"index", 0},
                                      {"id", "c1"},
                                      {"function", {{"name", "search"}, {"arguments", "{oo"}}}}));
  reply.chunks.insert(at + 1, piece({{"index", 0}, {"function", {{"arguments", "ps"}}}}));
  server.Script({reply});
  LlmResult result = MakeLlmProvider(ServerConfig("openai", server))->Complete(Ask("hi"));
  ASSERT_TRUE(result.ok()) << result.error->message;
  ASSERT_EQ(result.reply->tool_calls.size(), 1u);
  EXPECT_EQ(result.reply->tool_calls[0].name, "search");
  EXPECT_EQ(result.reply->tool_calls[0].arguments, Json("{oops"));
  EXPECT_EQ(result.reply->stop_reason, "tool_calls");
}

// --- anthropic ---

TEST(AnthropicProvider, StreamsTextWithTheSystemPromptApart) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::Anthropic("fused kernel here", {}, 21, 55)});
  auto provider = MakeLlmProvider(ServerConfig("anthropic", server));
  LlmResult result = provider->Complete(Ask("fuse these"));
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(result.reply->text, "fused kernel here");
  EXPECT_EQ(result.reply->stop_reason, "stop");
  EXPECT_EQ(result.reply->usage.input_tokens, 21);
  EXPECT_EQ(result.reply->usage.output_tokens, 55);

  const auto sent = server.requests().at(0);
  EXPECT_EQ(sent.path, "/v1/messages");
  EXPECT_EQ(sent.headers.at("x-api-key"), "sk-test-key");
  EXPECT_EQ(sent.headers.at("anthropic-version"), "2023-06-01");
  EXPECT_EQ(sent.headers.count("authorization"), 0u);
  EXPECT_EQ(sent.json["system"], "You write CUDA kernels.");
  EXPECT_EQ(sent.json["stream"], true);
  EXPECT_EQ(sent.json["max_tokens"], 1000);
  ASSERT_EQ(sent.json["messages"].size(), 1u);
  EXPECT_EQ(sent.json["messages"][0]["role"], "user");
  EXPECT_EQ(sent.last_user_message, "fuse these");
}

TEST(AnthropicProvider, ToolUseAndToolResults) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::Anthropic(
      "Searching.", {{"toolu_1", "search", Json{{"query", "SM90 TMA"}, {"k", 3}}}}, 5, 6)});
  auto provider = MakeLlmProvider(ServerConfig("anthropic", server));
  LlmResult result = provider->Complete(AskWithToolHistory());
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(result.reply->text, "Searching.");
  EXPECT_EQ(result.reply->stop_reason, "tool_calls");
  ASSERT_EQ(result.reply->tool_calls.size(), 1u);
  EXPECT_EQ(result.reply->tool_calls[0].id, "toolu_1");
  EXPECT_EQ(result.reply->tool_calls[0].arguments, (Json{{"query", "SM90 TMA"}, {"k", 3}}));

  const Json body = server.requests().at(0).json;
  ASSERT_EQ(body["messages"].size(), 3u);
  const Json& assistant = body["messages"][1];
  EXPECT_EQ(assistant["role"], "assistant");
  EXPECT_EQ(assistant["content"][0]["type"], "text");
  EXPECT_EQ(assistant["content"][1]["type"], "tool_use");
  EXPECT_EQ(assistant["content"][1]["id"], "call_7");
  EXPECT_EQ(assistant["content"][1]["input"], (Json{{"query", "gemm"}}));
  const Json& results = body["messages"][2];
  EXPECT_EQ(results["role"], "user");
  EXPECT_EQ(results["content"][0]["type"], "tool_result");
  EXPECT_EQ(results["content"][0]["tool_use_id"], "call_7");
  EXPECT_EQ(results["content"][0]["content"], "cute/gemm.hpp:12");
  EXPECT_EQ(body["tools"][0]["name"], "search");
  EXPECT_EQ(body["tools"][0]["input_schema"]["type"], "object");
}

TEST(AnthropicProvider, ReadsANonStreamJsonReply) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::JsonBody(
      {{"type", "message"},
       {"content",
        {{{"type", "text"}, {"text", "ok"}},
         {{"type", "tool_use"}, {"id", "t1"}, {"name", "grep"}, {"input", {{"q", "y"}}}}}},
       {"stop_reason", "tool_use"},
       {"usage", {{"input_tokens", 7}, {"output_tokens", 8}}}})});
  LlmResult result = MakeLlmProvider(ServerConfig("anthropic", server))->Complete(Ask("hi"));
  ASSERT_TRUE(result.ok()) << result.error->message;
  EXPECT_EQ(result.reply->text, "ok");
  ASSERT_EQ(result.reply->tool_calls.size(), 1u);
  EXPECT_EQ(result.reply->tool_calls[0].arguments, (Json{{"q", "y"}}));
  EXPECT_EQ(result.reply->usage.input_tokens, 7);
}

TEST(AnthropicProvider, AnOverloadedErrorEventIsRetryable) {
  LlmTestServer server;
  LlmScriptedReply reply = LlmScriptedReply::Anthropic("half").Truncated();
  reply.chunks.push_back(
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
      "\"message\":\"Overloaded\"}}\n\n");
  server.Script({reply});
  LlmResult result = MakeLlmProvider(ServerConfig("anthropic", server))->Complete(Ask("hi"));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error->retryable);
  EXPECT_NE(result.error->message.find("overloaded_error"), std::string::npos)
      << result.error->message;
  EXPECT_EQ(result.error->usage.input_tokens, 10);  // message_start had arrived
}

// --- failures, the same for both HTTP providers ---

class HttpFailures : public ::testing::TestWithParam<std::string> {
 protected:
  LlmResult Serve(LlmScriptedReply reply, std::chrono::milliseconds timeout = 5s) {
    server_.Script({std::move(reply)});
    LlmConfig config = ServerConfig(GetParam(), server_);
    config.timeout = timeout;
    return MakeLlmProvider(config)->Complete(Ask("hi"));
  }
  LlmScriptedReply Good() const {
    return GetParam() == "openai" ? LlmScriptedReply::OpenAi("text")
                                  : LlmScriptedReply::Anthropic("text");
  }
  LlmTestServer server_;
};

TEST_P(HttpFailures, RateLimitedIsRetryableWithRetryAfter) {
  LlmResult r = Serve(LlmScriptedReply::Status(429, "Rate limit reached", 7));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->http_status, 429);
  EXPECT_TRUE(r.error->retryable);
  EXPECT_DOUBLE_EQ(r.error->retry_after_s, 7);
  EXPECT_NE(r.error->message.find("Rate limit reached"), std::string::npos) << r.error->message;
}

TEST_P(HttpFailures, ServerErrorsAreRetryable) {
  for (int status : {500, 503}) {
    LlmResult r = Serve(LlmScriptedReply::Status(status, "upstream broke"));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error->http_status, status);
    EXPECT_TRUE(r.error->retryable);
    EXPECT_FALSE(r.error->malformed);
  }
}

TEST_P(HttpFailures, OtherClientErrorsAreNot) {
  LlmResult r = Serve(LlmScriptedReply::Status(401, "invalid x-api-key"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->http_status, 401);
  EXPECT_FALSE(r.error->retryable);
  EXPECT_NE(r.error->message.find("check the API key"), std::string::npos) << r.error->message;
}

TEST_P(HttpFailures, ATimeoutIsRetryable) {
  auto start = std::chrono::steady_clock::now();
  LlmResult r = Serve(Good().Delayed(5), 300ms);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error->retryable);
  EXPECT_NE(r.error->message.find("timeout"), std::string::npos) << r.error->message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST_P(HttpFailures, AStreamWithoutItsTerminalEventIsTruncated) {
  LlmResult r = Serve(Good().Truncated());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error->retryable);
  EXPECT_FALSE(r.error->malformed);
  EXPECT_NE(r.error->message.find("cut short"), std::string::npos) << r.error->message;
  EXPECT_EQ(r.error->usage.input_tokens, 10);  // usage arrived before the cut
}

TEST_P(HttpFailures, AConnectionDroppedMidBodyIsRetryable) {
  LlmResult r = Serve(Good().Truncated().Cut());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error->retryable);
  EXPECT_FALSE(r.error->malformed);
}

TEST_P(HttpFailures, GarbageIsMalformed) {
  LlmResult r = Serve(LlmScriptedReply::Garbage());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error->malformed);
  EXPECT_NE(r.error->message.find("neither an event stream"), std::string::npos)
      << r.error->message;
  // Quoted bytes are printable ASCII (they may end up in JSON).
  for (unsigned char c : r.error->message) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << int(c);
}

TEST_P(HttpFailures, NoServerIsRetryable) {
  LlmConfig config = ServerConfig(GetParam(), server_);
  {
    LlmTestServer gone;  // a port that was just closed
    config.base_url = gone.base_url() + (GetParam() == "openai" ? "/v1" : "");
  }
  LlmResult r = MakeLlmProvider(config)->Complete(Ask("hi"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->http_status, 0);
  EXPECT_TRUE(r.error->retryable);
  EXPECT_NE(r.error->message.find("Cannot reach"), std::string::npos) << r.error->message;
}

INSTANTIATE_TEST_SUITE_P(Providers, HttpFailures, ::testing::Values("openai", "anthropic"));

// --- exec ---

std::filesystem::path WriteScript(const std::filesystem::path& dir, const std::string& body) {
  auto path = dir / "model.sh";
  WriteTextFileAtomic(path, "#!/bin/sh\n" + body);
  return path;
}

LlmConfig ExecConfig(const std::filesystem::path& script) {
  LlmConfig c;
  c.provider = "exec";
  c.model = "local";
  c.command = "sh " + script.string();
  c.timeout = 5s;
  return c;
}

TEST(ExecProvider, SendsTheRequestOnStdinAndReadsAJsonReply) {
  auto dir = testing::ScratchDir("llm-exec");
  auto script = WriteScript(
      dir,
      "cat > " + (dir / "request.json").string() + "\n" +
          R"(printf '{"text":"from exec","tool_calls":[{"name":"grep","arguments":{"q":"x"}}],"usage":{"input_tokens":5,"output_tokens":7}}')");
  LlmResult r = MakeLlmProvider(ExecConfig(script))->Complete(AskWithToolHistory());
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.reply->text, "from exec");
  ASSERT_EQ(r.reply->tool_calls.size(), 1u);
  EXPECT_EQ(r.reply->tool_calls[0].name, "grep");
  EXPECT_EQ(r.reply->tool_calls[0].id, "call_0");
  EXPECT_EQ(r.reply->tool_calls[0].arguments, (Json{{"q", "x"}}));
  EXPECT_EQ(r.reply->stop_reason, "tool_calls");
  EXPECT_EQ(r.reply->usage.output_tokens, 7);

  Json sent = ReadJsonFile(dir / "request.json");
  EXPECT_EQ(sent["model"], "test-model");
  EXPECT_EQ(sent["messages"][0]["role"], "system");
  EXPECT_EQ(sent["messages"][2]["tool_calls"][0]["arguments"], (Json{{"query", "gemm"}}));
  EXPECT_EQ(sent["messages"][3]["tool_call_id"], "call_7");
  EXPECT_EQ(sent["tools"][0]["parameters"]["type"], "object");
  EXPECT_EQ(sent["max_tokens"], 1000);
}

TEST(ExecProvider, PlainTextIsTheReply) {
  auto dir = testing::ScratchDir("llm-exec");
  auto script = WriteScript(
      dir, "cat >/dev/null\necho '```cuda'\necho '__global__ void k() {}'\necho '```'\n");
  LlmResult r = MakeLlmProvider(ExecConfig(script))->Complete(Ask("hi"));
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.reply->text, "```cuda\n__global__ void k() {}\n```\n");
  EXPECT_TRUE(r.reply->tool_calls.empty());
}

TEST(ExecProvider, AFailingCommandReportsItsLastStderrLine) {
  auto dir = testing::ScratchDir("llm-exec");
  auto script =
      WriteScript(dir, "cat >/dev/null\necho starting >&2\necho 'model not loaded' >&2\nexit 3\n");
  LlmResult r = MakeLlmProvider(ExecConfig(script))->Complete(Ask("hi"));
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error->retryable);
  EXPECT_NE(r.error->message.find("exit 3"), std::string::npos) << r.error->message;
  EXPECT_NE(r.error->message.find("model not loaded"), std::string::npos) << r.error->message;
  EXPECT_EQ(r.error->message.find("starting"), std::string::npos) << r.error->message;
}

TEST(ExecProvider, Exit75AndTimeoutsAreRetryable) {
  auto dir = testing::ScratchDir("llm-exec");
  auto busy = WriteScript(dir, "cat >/dev/null\necho busy >&2\nexit 75\n");
  LlmResult r = MakeLlmProvider(ExecConfig(busy))->Complete(Ask("hi"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error->retryable);

  auto slow = WriteScript(dir, "cat >/dev/null\nsleep 10\n");
  LlmConfig config = ExecConfig(slow);
  config.timeout = 300ms;
  auto start = std::chrono::steady_clock::now();
  r = MakeLlmProvider(config)->Complete(Ask("hi"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error->retryable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// --- configuration ---

class ScopedEnv {
 public:
  ScopedEnv() {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      if (v) saved_.emplace_back(name, v);
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const char* name : kNames) ::unsetenv(name);
    for (const auto& [name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  void Set(const char* name, const char* value) { ::setenv(name, value, 1); }

 private:
  static constexpr const char* kNames[] = {
      "KOPT_LLM",           "OPENAI_API_KEY",   "OPENAI_BASE_URL",   "ANTHROPIC_API_KEY",
      "ANTHROPIC_BASE_URL", "KOPT_LLM_COMMAND", "KOPT_LLM_TIMEOUT_S"};
  std::vector<std::pair<std::string, std::string>> saved_;
};

std::string ConfigError(LlmConfig flags = {}) {
  try {
    LlmConfigFromEnv(flags);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(LlmConfigFromEnv, ProviderAndModelFromKoptLlm) {
  ScopedEnv env;
  env.Set("KOPT_LLM", "anthropic:claude-sonnet-4-5");
  env.Set("ANTHROPIC_API_KEY", "ak");
  LlmConfig c = LlmConfigFromEnv({});
  EXPECT_EQ(c.provider, "anthropic");
  EXPECT_EQ(c.model, "claude-sonnet-4-5");
  EXPECT_EQ(c.base_url, "https://api.anthropic.com");
  EXPECT_EQ(c.api_key, "ak");
}

TEST(LlmConfigFromEnv, InfersTheProvider) {
  {
    ScopedEnv env;
    env.Set("KOPT_LLM", "claude-opus-4-1");
    env.Set("ANTHROPIC_API_KEY", "ak");
    EXPECT_EQ(LlmConfigFromEnv({}).provider, "anthropic");
  }
  {
    ScopedEnv env;  // both keys: openai
    env.Set("KOPT_LLM", "gpt-4.1");
    env.Set("ANTHROPIC_API_KEY", "ak");
    env.Set("OPENAI_API_KEY", "ok");
    LlmConfig c = LlmConfigFromEnv({});
    EXPECT_EQ(c.provider, "openai");
    EXPECT_EQ(c.base_url, "https://api.openai.com/v1");
    EXPECT_EQ(c.api_key, "ok");
  }
  {
    ScopedEnv env;  // a local server with a model name that has a colon; no key needed
    env.Set("KOPT_LLM", "qwen2.5-coder:32b");
    env.Set("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1");
    LlmConfig c = LlmConfigFromEnv({});
    EXPECT_EQ(c.provider, "openai");
    EXPECT_EQ(c.model, "qwen2.5-coder:32b");
    EXPECT_EQ(c.base_url, "http://127.0.0.1:11434/v1");
    EXPECT_EQ(c.api_key, "");
  }
  {
    ScopedEnv env;
    env.Set("KOPT_LLM_COMMAND", "my-model --json");
    LlmConfig c = LlmConfigFromEnv({});
    EXPECT_EQ(c.provider, "exec");
    EXPECT_EQ(c.command, "my-model --json");
  }
}

TEST(LlmConfigFromEnv, TimeoutFromTheEnvironment) {
  ScopedEnv env;
  env.Set("KOPT_LLM", "openai:m");
  env.Set("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1");
  EXPECT_EQ(LlmConfigFromEnv({}).timeout, std::chrono::milliseconds(300000));
  env.Set("KOPT_LLM_TIMEOUT_S", "2.5");
  EXPECT_EQ(LlmConfigFromEnv({}).timeout, std::chrono::milliseconds(2500));
  for (const char* bad : {"0", "-1", "soon", "5s"}) {
    env.Set("KOPT_LLM_TIMEOUT_S", bad);
    EXPECT_NE(ConfigError().find("KOPT_LLM_TIMEOUT_S is '"), std::string::npos) << bad;
  }
}

TEST(LlmConfigFromEnv, FlagsWin) {
  ScopedEnv env;
  env.Set("KOPT_LLM", "openai:gpt-4.1");
  env.Set("OPENAI_API_KEY", "env-key");
  env.Set("OPENAI_BASE_URL", "http://env/v1");
  LlmConfig flags;
  flags.model = "openai:local-model";
  flags.base_url = "http://flag/v1";
  flags.api_key = "flag-key";
  LlmConfig c = LlmConfigFromEnv(flags);
  EXPECT_EQ(c.model, "local-model");
  EXPECT_EQ(c.base_url, "http://flag/v1");
  EXPECT_EQ(c.api_key, "flag-key");
}

TEST(LlmConfigFromEnv, SaysWhichVariableIsMissing) {
  {
    ScopedEnv env;
    env.Set("OPENAI_API_KEY", "ok");
    EXPECT_NE(ConfigError().find("set KOPT_LLM"), std::string::npos) << ConfigError();
  }
  {
    ScopedEnv env;
    env.Set("KOPT_LLM", "anthropic:claude-sonnet-4-5");
    EXPECT_NE(ConfigError().find("ANTHROPIC_API_KEY"), std::string::npos) << ConfigError();
  }
  {
    ScopedEnv env;
    env.Set("KOPT_LLM", "gpt-4.1");
    EXPECT_NE(ConfigError().find("OPENAI_API_KEY"), std::string::npos) << ConfigError();
  }
  {
    ScopedEnv env;
    env.Set("KOPT_LLM", "exec:anything");
    EXPECT_NE(ConfigError().find("KOPT_LLM_COMMAND"), std::string::npos) << ConfigError();
  }
  {
    ScopedEnv env;
    LlmConfig flags;
    flags.provider = "gemini";
    flags.model = "m";
    EXPECT_NE(ConfigError(flags).find("Unknown LLM provider 'gemini'"), std::string::npos);
  }
}

// --- keys ---

constexpr const char* kKey = "sk-KOPTSECRET-0123456789abcdef0123456789";

// Every error path, with a server that quotes the key back wherever it can
// (OpenAI's own 401 body quotes part of it): no message, cache file or
// statistic may hold it.
TEST(LlmKeys, NeverAppearInErrorsStatsOrTheCache) {
  std::string key = kKey;
  std::string long_text(150, 'x');  // puts the key where a snippet would cut it
  std::vector<std::string> messages;
  auto cache = testing::ScratchDir("llm-keys");
  for (std::string provider : {"openai", "anthropic"}) {
    LlmTestServer server;
    LlmScriptedReply stream_error = LlmScriptedReply::Anthropic("").Truncated();
    stream_error.chunks.push_back(
        "event: error\ndata: " +
        Json{{"type", "error"},
             {"error", {{"type", "invalid_request_error"}, {"message", "bad key " + key}}}}
            .dump() +
        "\n\n");
    LlmScriptedReply openai_error = LlmScriptedReply::OpenAi("").Truncated();
    openai_error.chunks.push_back(
        "data: " + Json{{"error", {{"message", "bad key " + key}}}}.dump() + "\n\n");
    LlmScriptedReply garbage = LlmScriptedReply::Garbage();
    garbage.chunks.push_back("key=" + key + "\n");
    server.Script({
        provider == "openai" ? LlmScriptedReply::OpenAi("fine")
                             : LlmScriptedReply::Anthropic("fine"),
        LlmScriptedReply::Status(401, "Incorrect API key provided: " + key),
        LlmScriptedReply::Status(500, long_text + key),
        LlmScriptedReply::Status(429, "slow down " + key, 1),
        LlmScriptedReply::JsonBody({{"error", {{"message", "key " + key}}}}),
        provider == "openai" ? openai_error : stream_error,
        garbage,
        (provider == "openai" ? LlmScriptedReply::OpenAi("t") : LlmScriptedReply::Anthropic("t"))
            .Truncated(),
        (provider == "openai" ? LlmScriptedReply::OpenAi("t") : LlmScriptedReply::Anthropic("t"))
            .Delayed(5),
    });
    LlmConfig config = ServerConfig(provider, server, key);
    config.timeout = 300ms;
    config.max_retries = 0;
    LlmClient client(MakeLlmProvider(config), config, cache / provider, nullptr);
    ASSERT_TRUE(client.Complete(Ask("a good one")).ok());  // leaves a cache entry
    for (int i = 0; i < 8; ++i) {
      LlmResult r = client.Complete(Ask("request " + std::to_string(i)));
      ASSERT_FALSE(r.ok()) << provider << " " << i;
      messages.push_back(r.error->message);
    }
    messages.push_back(client.Stats().dump());
    // The key did go out, in the header that carries it.
    auto sent = server.requests();
    ASSERT_EQ(sent.size(), 9u);
    EXPECT_EQ(sent[0].body.find(key), std::string::npos);
    EXPECT_NE((provider == "openai" ? sent[0].headers.at("authorization")
                                    : sent[0].headers.at("x-api-key"))
                  .find(key),
              std::string::npos);
  }
  {  // exec: a command that prints the key on stderr
    auto dir = testing::ScratchDir("llm-exec");
    auto script =
        WriteScript(dir, "cat >/dev/null\necho \"auth failed for " + key + "\" >&2\nexit 1\n");
    LlmConfig config = ExecConfig(script);
    config.api_key = key;
    LlmResult r = MakeLlmProvider(config)->Complete(Ask("hi"));
    ASSERT_FALSE(r.ok());
    messages.push_back(r.error->message);
  }
  {  // a host that does not answer
    LlmConfig config;
    config.provider = "openai";
    config.base_url = "http://127.0.0.1:1/v1";
    config.api_key = key;
    config.model = "m";
    messages.push_back(MakeLlmProvider(config)->Complete(Ask("hi")).error->message);
  }
  ASSERT_EQ(messages.size(), 20u);
  std::string key_prefix = key.substr(0, 12);
  for (const auto& m : messages) {
    EXPECT_EQ(m.find(key_prefix), std::string::npos) << m;
    EXPECT_FALSE(m.empty());
  }
  // The server's words still reach the user, without the key.
  EXPECT_NE(messages[0].find("Incorrect API key provided: [redacted]"), std::string::npos)
      << messages[0];
  int cache_files = 0;
  for (auto& entry : std::filesystem::recursive_directory_iterator(cache))
    if (entry.is_regular_file()) {
      ++cache_files;
      EXPECT_EQ(ReadTextFile(entry.path()).find(key_prefix), std::string::npos) << entry.path();
    }
  EXPECT_EQ(cache_files, 2);
}

}  // namespace
}  // namespace kopt
