// LlmClient over a real provider and a real HTTP server on loopback: retries
// and their waits, the reply cache, budget charging and requests in flight.
#include "propose/llm/client.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "core/budget.h"
#include "testing/llm_server.h"
#include "testing/paths.h"

namespace kopt {
namespace {

using testing::LlmScriptedReply;
using testing::LlmTestServer;
using namespace std::chrono_literals;

LlmConfig Config(const LlmTestServer& server, const std::string& provider = "openai") {
  LlmConfig c;
  c.provider = provider;
  c.model = "test-model";
  c.base_url = provider == "openai" ? server.base_url() + "/v1" : server.base_url();
  c.api_key = "sk-test";
  c.timeout = 5s;
  c.max_retries = 4;
  c.backoff_initial_s = 1.0;
  return c;
}

LlmRequest Ask(const std::string& text) {
  LlmRequest r;
  r.model = "test-model";
  r.messages = {{"user", text, {}, ""}};
  return r;
}

// A client whose waits are recorded instead of slept.
struct Fixture {
  explicit Fixture(LlmConfig config, std::filesystem::path cache = {}, Budget* budget = nullptr)
      : client(MakeLlmProvider(config), config, std::move(cache), budget) {
    client.SetSleep([this](double s) { waits.push_back(s); });
  }
  LlmClient client;
  std::vector<double> waits;
};

TEST(LlmClient, RetriesARateLimitAfterTheWaitItAsksFor) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::Status(429, "slow down", 3), LlmScriptedReply::OpenAi("done")});
  Fixture f(Config(server));
  LlmResult r = f.client.Complete(Ask("hi"));
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.reply->text, "done");
  EXPECT_EQ(f.waits, std::vector<double>({3.0}));
  EXPECT_EQ(server.requests().size(), 2u);
  Json stats = f.client.Stats();
  EXPECT_EQ(stats["retries"], 1);
  EXPECT_EQ(stats["provider_calls"], 2);
  EXPECT_EQ(stats["requests"], 1);
  EXPECT_DOUBLE_EQ(stats["waited_s"].get<double>(), 3.0);
}

TEST(LlmClient, BacksOffExponentiallyWithJitterOnServerErrors) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::Status(503, "busy"), LlmScriptedReply::Status(500, "oops"),
                 LlmScriptedReply::Status(502, "bad gateway"), LlmScriptedReply::Anthropic("ok")});
  Fixture f(Config(server, "anthropic"));
  LlmResult r = f.client.Complete(Ask("hi"));
  ASSERT_TRUE(r.ok()) << r.error->message;
  ASSERT_EQ(f.waits.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    double base = std::pow(2.0, i);
    EXPECT_GE(f.waits[i], 0.5 * base) << i;
    EXPECT_LE(f.waits[i], 1.5 * base) << i;
  }
}

TEST(LlmClient, GivesUpAfterMaxRetries) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::Status(500, "a"), LlmScriptedReply::Status(500, "b"),
                 LlmScriptedReply::Status(500, "c"), LlmScriptedReply::OpenAi("never")});
  LlmConfig config = Config(server);
  config.max_retries = 2;
  Fixture f(config);
  LlmResult r = f.client.Complete(Ask("hi"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->http_status, 500);
  EXPECT_NE(r.error->message.find("gave up after 3 attempts"), std::string::npos)
      << r.error->message;
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(server.unserved(), 1u);
  EXPECT_EQ(f.client.Stats()["failures"], 1);
}

TEST(LlmClient, DoesNotRetryAClientError) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::Status(400, "model not found"), LlmScriptedReply::OpenAi("x")});
  Fixture f(Config(server));
  LlmResult r = f.client.Complete(Ask("hi"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(f.waits.empty());
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(LlmClient, RetriesGarbageOnceOnly) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::Garbage(), LlmScriptedReply::Garbage(),
                 LlmScriptedReply::OpenAi("never")});
  Fixture f(Config(server));
  LlmResult r = f.client.Complete(Ask("hi"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error->malformed);
  EXPECT_EQ(server.requests().size(), 2u);

  // Once garbled, then fine: the retry is worth it.
  LlmTestServer server2;
  server2.Script({LlmScriptedReply::Garbage(), LlmScriptedReply::OpenAi("good")});
  Fixture g(Config(server2));
  r = g.client.Complete(Ask("hi"));
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.reply->text, "good");
}

TEST(LlmClient, RetriesTruncatedStreamsAndTimeouts) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::OpenAi("cut").Truncated(),
                 LlmScriptedReply::OpenAi("slow").Delayed(5), LlmScriptedReply::OpenAi("whole")});
  LlmConfig config = Config(server);
  config.timeout = 400ms;
  Fixture f(config);
  LlmResult r = f.client.Complete(Ask("hi"));
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_EQ(r.reply->text, "whole");
  EXPECT_EQ(f.waits.size(), 2u);
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(LlmClient, ARerunIsServedFromTheCacheAndChargedOnce) {
  LlmTestServer server;
  server.Script(
      {LlmScriptedReply::OpenAi("cached text", {{"c1", "search", Json{{"q", "x"}}}}, 100, 50)});
  auto cache = testing::ScratchDir("llm-cache");
  Budget budget(BudgetLimits{});
  {
    Fixture first(Config(server), cache, &budget);
    LlmResult r = first.client.Complete(Ask("write the kernel"));
    ASSERT_TRUE(r.ok()) << r.error->message;
    EXPECT_FALSE(r.reply->cached);
  }
  EXPECT_EQ(budget.Spent().llm_tokens, 150);
  Fixture rerun(Config(server), cache, &budget);
  LlmResult r = rerun.client.Complete(Ask("write the kernel"));
  ASSERT_TRUE(r.ok()) << r.error->message;
  EXPECT_TRUE(r.reply->cached);
  EXPECT_EQ(r.reply->text, "cached text");
  ASSERT_EQ(r.reply->tool_calls.size(), 1u);
  EXPECT_EQ(r.reply->tool_calls[0].arguments, (Json{{"q", "x"}}));
  EXPECT_EQ(server.requests().size(), 1u);  // no second request
  EXPECT_EQ(budget.Spent().llm_tokens, 150);
  EXPECT_EQ(rerun.client.Stats()["cache_hits"], 1);
  EXPECT_EQ(rerun.client.Stats()["input_tokens"], 0);

  // Another request is not a hit.
  server.Script({LlmScriptedReply::OpenAi("other")});
  EXPECT_FALSE(rerun.client.Complete(Ask("write another")).reply->cached);
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(LlmClient, ADamagedCacheEntryIsAMiss) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::OpenAi("first"), LlmScriptedReply::OpenAi("second")});
  auto cache = testing::ScratchDir("llm-cache");
  Fixture f(Config(server), cache);
  ASSERT_TRUE(f.client.Complete(Ask("hi")).ok());
  auto entry = cache / (LlmRequestHash("openai", Ask("hi")) + ".json");
  ASSERT_TRUE(std::filesystem::exists(entry));
  WriteTextFileAtomic(entry, "{\"version\": \"kopt-llm-cache-v1\", \"reply\": {\"tex");
  LlmResult r = f.client.Complete(Ask("hi"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.reply->cached);
  EXPECT_EQ(r.reply->text, "second");
  EXPECT_EQ(server.requests().size(), 2u);
  // ... and the entry is whole again.
  EXPECT_EQ(ReadJsonFile(entry)["reply"]["text"], "second");
}

TEST(LlmClient, AnExhaustedBudgetSendsNothing) {
  LlmTestServer server;
  server.Script({LlmScriptedReply::OpenAi("one", {}, 20, 10), LlmScriptedReply::OpenAi("two")});
  BudgetLimits limits;
  limits.llm_tokens = 25;
  Budget budget(limits);
  Fixture f(Config(server), {}, &budget);
  ASSERT_TRUE(f.client.Complete(Ask("first")).ok());
  EXPECT_TRUE(budget.Exhausted());
  LlmResult r = f.client.Complete(Ask("second"));
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error->retryable);
  EXPECT_NE(r.error->message.find("budget"), std::string::npos) << r.error->message;
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(f.client.Stats()["budget_refusals"], 1);
}

TEST(LlmClient, ChargesCostFromPricesAndTokensOfFailedAttempts) {
  LlmTestServer server;
  // The cut stream had reported its input tokens (message_start): charged.
  server.Script({LlmScriptedReply::Anthropic("cut", {}, 1000, 1).Truncated(),
                 LlmScriptedReply::Anthropic("ok", {}, 1000, 2000)});
  LlmConfig config = Config(server, "anthropic");
  config.input_usd_per_mtok = 3;
  config.output_usd_per_mtok = 15;
  Budget budget(BudgetLimits{});
  Fixture f(config, {}, &budget);
  LlmResult r = f.client.Complete(Ask("hi"));
  ASSERT_TRUE(r.ok()) << r.error->message;
  // Attempt 1: 1000 in + 1 out; attempt 2: 1000 in + 2000 out.
  EXPECT_EQ(budget.Spent().llm_tokens, 4001);
  double cost = (2000 * 3.0 + 2001 * 15.0) / 1e6;
  EXPECT_NEAR(budget.Spent().llm_cost_usd, cost, 1e-12);
  EXPECT_NEAR(r.reply->usage.cost_usd, (1000 * 3.0 + 2000 * 15.0) / 1e6, 1e-12);
  EXPECT_NEAR(f.client.Stats()["cost_usd"].get<double>(), cost, 1e-12);
}

TEST(LlmClient, SeveralRequestsInFlight) {
  LlmTestServer server;
  for (int i = 0; i < 4; ++i)
    server.Script({LlmScriptedReply::OpenAi("reply " + std::to_string(i))
                       .Matching("ask " + std::to_string(i))
                       .Delayed(0.5)});
  LlmConfig config = Config(server);
  config.max_in_flight = 4;
  Fixture f(config);
  std::vector<std::future<LlmResult>> futures;
  for (int i = 0; i < 4; ++i)
    futures.push_back(f.client.CompleteAsync(Ask("ask " + std::to_string(i))));
  for (int i = 0; i < 4; ++i) {
    LlmResult r = futures[i].get();
    ASSERT_TRUE(r.ok()) << r.error->message;
    EXPECT_EQ(r.reply->text, "reply " + std::to_string(i));  // matched by content
  }
  EXPECT_GE(server.max_concurrent(), 2);
  EXPECT_EQ(f.client.Stats()["requests"], 4);
}

TEST(LlmClient, MaxInFlightBoundsTheOverlap) {
  LlmTestServer server;
  for (int i = 0; i < 3; ++i) server.Script({LlmScriptedReply::OpenAi("r").Delayed(0.1)});
  LlmConfig config = Config(server);
  config.max_in_flight = 1;
  Fixture f(config);
  std::vector<std::future<LlmResult>> futures;
  for (int i = 0; i < 3; ++i)
    futures.push_back(f.client.CompleteAsync(Ask("a" + std::to_string(i))));
  for (auto& fu : futures) EXPECT_TRUE(fu.get().ok());
  EXPECT_EQ(server.max_concurrent(), 1);
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(LlmClient, TheExecProviderThroughTheClient) {
  auto dir = testing::ScratchDir("llm-exec");
  auto counter = dir / "calls";
  WriteTextFileAtomic(dir / "model.sh", "#!/bin/sh\ncat >/dev/null\necho x >> " + counter.string() +
                                            "\necho 'plain answer'\n");
  LlmConfig config;
  config.provider = "exec";
  config.model = "m";
  config.command = "sh " + (dir / "model.sh").string();
  Fixture f(config, dir / "cache");
  EXPECT_EQ(f.client.Complete(Ask("q")).reply->text, "plain answer\n");
  EXPECT_TRUE(f.client.Complete(Ask("q")).reply->cached);
  EXPECT_EQ(ReadTextFile(counter), "x\n");  // the command ran once
}

TEST(LlmRequestHash, CoversEveryField) {
  LlmRequest a = Ask("hi");
  std::string h = LlmRequestHash("openai", a);
  EXPECT_EQ(h, LlmRequestHash("openai", Ask("hi")));
  EXPECT_NE(h, LlmRequestHash("anthropic", a));
  LlmRequest b = a;
  b.temperature = 0.7;
  EXPECT_NE(h, LlmRequestHash("openai", b));
  b = a;
  b.model = "other";
  EXPECT_NE(h, LlmRequestHash("openai", b));
  b = a;
  b.max_tokens = 10;
  EXPECT_NE(h, LlmRequestHash("openai", b));
  b = a;
  b.tools = {{"t", "d", Json::object()}};
  EXPECT_NE(h, LlmRequestHash("openai", b));
  b = a;
  b.messages[0].tool_call_id = "x";
  EXPECT_NE(h, LlmRequestHash("openai", b));
}

}  // namespace
}  // namespace kopt
