#include "propose/llm/client.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/budget.h"
#include "core/error.h"
#include "core/hash.h"

namespace kopt {
namespace {

constexpr const char* kCacheVersion = "kopt-llm-cache-v1";
constexpr double kMaxBackoffS = 60;
constexpr double kMaxRetryAfterS = 300;

Json ToolCallJson(const LlmToolCall& c) {
  return {{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}};
}

Json RequestJson(const LlmRequest& r) {
  Json messages = Json::array();
  for (const auto& m : r.messages) {
    Json calls = Json::array();
    for (const auto& c : m.tool_calls) calls.push_back(ToolCallJson(c));
    messages.push_back({{"role", m.role},
                        {"content", m.content},
                        {"tool_calls", std::move(calls)},
                        {"tool_call_id", m.tool_call_id}});
  }
  Json tools = Json::array();
  for (const auto& t : r.tools)
    tools.push_back(
        {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}});
  return {{"model", r.model},
          {"messages", std::move(messages)},
          {"tools", std::move(tools)},
          {"max_tokens", r.max_tokens},
          {"temperature", r.temperature}};
}

Json ReplyJson(const LlmReply& r) {
  Json calls = Json::array();
  for (const auto& c : r.tool_calls) calls.push_back(ToolCallJson(c));
  return {{"text", r.text},
          {"tool_calls", std::move(calls)},
          {"stop_reason", r.stop_reason},
          {"usage",
           {{"input_tokens", r.usage.input_tokens},
            {"output_tokens", r.usage.output_tokens},
            {"cost_usd", r.usage.cost_usd}}}};
}

// A cache entry in any other shape is a miss, never an error.
std::optional<LlmReply> ReplyFromJson(const Json& j) {
  if (!j.is_object() || !j.contains("text") || !j["text"].is_string() ||
      !j.contains("tool_calls") || !j["tool_calls"].is_array())
    return std::nullopt;
  LlmReply r;
  r.text = j["text"];
  for (const auto& c : j["tool_calls"]) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return std::nullopt;
    r.tool_calls.push_back(
        {c.value("id", ""), c["name"], c.contains("arguments") ? c["arguments"] : Json::object()});
  }
  r.stop_reason = j.value("stop_reason", "stop");
  if (j.contains("usage") && j["usage"].is_object()) {
    r.usage.input_tokens = static_cast<long long>(NumberOr(j["usage"], "input_tokens"));
    r.usage.output_tokens = static_cast<long long>(NumberOr(j["usage"], "output_tokens"));
    r.usage.cost_usd = NumberOr(j["usage"], "cost_usd");
  }
  return r;
}

}  // namespace

std::string LlmRequestHash(const std::string& provider, const LlmRequest& request) {
  std::string body = RequestJson(request).dump();
  return ContentHash({kCacheVersion, provider, body});
}

struct LlmClient::Impl {
  std::unique_ptr<LlmProvider> provider;
  LlmConfig config;
  std::filesystem::path cache_dir;
  Budget* budget = nullptr;

  mutable std::mutex mu;  // guards everything below
  std::function<void(double)> sleep = [](double s) {
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
  };
  std::mt19937_64 rng{std::random_device{}()};
  long long requests = 0, cache_hits = 0, provider_calls = 0, retries = 0, failures = 0;
  long long budget_refusals = 0, cache_write_failures = 0;
  long long input_tokens = 0, output_tokens = 0;
  double cost_usd = 0, waited_s = 0;

  std::condition_variable pool_cv;
  std::deque<std::packaged_task<LlmResult()>> queue;
  std::vector<std::thread> workers;
  bool stopping = false;

  std::filesystem::path CachePath(const std::string& hash) const {
    return cache_dir / (hash + ".json");
  }

  std::optional<LlmReply> CacheRead(const std::string& hash) {
    if (cache_dir.empty()) return std::nullopt;
    std::error_code ec;
    auto path = CachePath(hash);
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    try {
      Json entry = ReadJsonFile(path);
      if (!entry.is_object() || entry.value("version", "") != kCacheVersion ||
          !entry.contains("reply"))
        return std::nullopt;
      return ReplyFromJson(entry["reply"]);
    } catch (const std::exception&) {
      return std::nullopt;  // damaged: ask again and overwrite it
    }
  }

  void CacheWrite(const std::string& hash, const LlmRequest& request, const LlmReply& reply) {
    if (cache_dir.empty()) return;
    Json entry = {{"version", kCacheVersion},
                  {"provider", provider->Name()},
                  {"model", request.model},
                  {"reply", ReplyJson(reply)}};
    try {
      WriteJsonFileAtomic(CachePath(hash), entry);
    } catch (const std::exception&) {
      // The reply is good; a cache that cannot be written only costs a rerun.
      std::lock_guard lock(mu);
      ++cache_write_failures;
    }
  }

  // Charges one attempt's usage; fills in the cost from the config's prices
  // when the endpoint did not report one.
  void Charge(LlmUsage* usage) {
    if (usage->cost_usd == 0)
      usage->cost_usd = (usage->input_tokens * config.input_usd_per_mtok +
                         usage->output_tokens * config.output_usd_per_mtok) /
                        1e6;
    if (usage->input_tokens == 0 && usage->output_tokens == 0 && usage->cost_usd == 0) return;
    {
      std::lock_guard lock(mu);
      input_tokens += usage->input_tokens;
      output_tokens += usage->output_tokens;
      cost_usd += usage->cost_usd;
    }
    if (budget) budget->AddLlm(usage->input_tokens + usage->output_tokens, usage->cost_usd);
  }

  double Backoff(int attempt, const LlmError& error) {
    if (error.retry_after_s > 0) return std::min(error.retry_after_s, kMaxRetryAfterS);
    std::lock_guard lock(mu);
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    return std::min(kMaxBackoffS, config.backoff_initial_s * std::pow(2.0, attempt) * jitter(rng));
  }

  LlmResult Refused() {
    LlmError error;
    error.message = fmt::format("The LLM request was not sent: the run's budget is spent ({}).",
                                budget->ExhaustedReason());
    std::lock_guard lock(mu);
    ++budget_refusals;
    return {std::nullopt, std::move(error)};
  }

  LlmResult Complete(const LlmRequest& request) {
    {
      std::lock_guard lock(mu);
      ++requests;
    }
    std::string hash = LlmRequestHash(provider->Name(), request);
    if (auto cached = CacheRead(hash)) {
      std::lock_guard lock(mu);
      ++cache_hits;
      cached->cached = true;
      return {std::move(cached), std::nullopt};
    }
    LlmResult result;
    int malformed = 0;
    int attempts = 0;
    for (int attempt = 0;; ++attempt) {
      if (budget && budget->Exhausted()) {
        result = Refused();
        break;
      }
      {
        std::lock_guard lock(mu);
        ++provider_calls;
      }
      ++attempts;
      result = provider->Complete(request);
      if (result.ok()) {
        Charge(&result.reply->usage);
        CacheWrite(hash, request, *result.reply);
        return result;
      }
      LlmError& error = *result.error;
      Charge(&error.usage);
      if (error.malformed) ++malformed;
      bool again = error.retryable && attempt < config.max_retries && malformed < 2;
      if (!again) break;
      double wait_s = Backoff(attempt, error);
      std::function<void(double)> sleep_fn;
      {
        std::lock_guard lock(mu);
        ++retries;
        waited_s += wait_s;
        sleep_fn = sleep;
      }
      sleep_fn(wait_s);
    }
    std::lock_guard lock(mu);
    ++failures;
    if (attempts > 1 && result.error) {
      std::string& m = result.error->message;
      if (!m.empty() && m.back() == '.') m.pop_back();
      m += fmt::format(" (gave up after {} attempts).", attempts);
    }
    return result;
  }

  void Work() {
    for (;;) {
      std::packaged_task<LlmResult()> task;
      {
        std::unique_lock lock(mu);
        pool_cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;  // stopping, and every queued request answered
        task = std::move(queue.front());
        queue.pop_front();
      }
      task();
    }
  }
};

LlmClient::LlmClient(std::unique_ptr<LlmProvider> provider, LlmConfig config,
                     std::filesystem::path cache_dir, Budget* budget)
    : impl_(std::make_unique<Impl>()) {
  if (!provider) throw Error("LlmClient needs a provider: none was given.");
  impl_->provider = std::move(provider);
  impl_->config = std::move(config);
  impl_->cache_dir = std::move(cache_dir);
  impl_->budget = budget;
}

LlmClient::~LlmClient() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->pool_cv.notify_all();
  for (auto& t : impl_->workers) t.join();
}

LlmResult LlmClient::Complete(const LlmRequest& request) { return impl_->Complete(request); }

std::future<LlmResult> LlmClient::CompleteAsync(LlmRequest request) {
  Impl* impl = impl_.get();
  std::packaged_task<LlmResult()> task(
      [impl, request = std::move(request)] { return impl->Complete(request); });
  auto future = task.get_future();
  {
    std::lock_guard lock(impl->mu);
    impl->queue.push_back(std::move(task));
    if (static_cast<int>(impl->workers.size()) < std::max(1, impl->config.max_in_flight))
      impl->workers.emplace_back([impl] { impl->Work(); });
  }
  impl->pool_cv.notify_one();
  return future;
}

Json LlmClient::Stats() const {
  std::lock_guard lock(impl_->mu);
  const Impl& s = *impl_;
  return {{"provider", s.provider->Name()},
          {"requests", s.requests},
          {"cache_hits", s.cache_hits},
          {"provider_calls", s.provider_calls},
          {"retries", s.retries},
          {"failures", s.failures},
          {"budget_refusals", s.budget_refusals},
          {"cache_write_failures", s.cache_write_failures},
          {"input_tokens", s.input_tokens},
          {"output_tokens", s.output_tokens},
          {"cost_usd", s.cost_usd},
          {"waited_s", s.waited_s}};
}

void LlmClient::SetSleep(std::function<void(double seconds)> sleep) {
  std::lock_guard lock(impl_->mu);
  impl_->sleep = std::move(sleep);
}

}  // namespace kopt
