// The LLM client the proposer talks to: a provider wrapped with retries and
// backoff, a reply cache keyed by the prompt's hash (a rerun costs nothing),
// budget charging (tokens, cost) and several requests in flight.
#pragma once

#include <filesystem>
#include <functional>
#include <future>
#include <memory>

#include "propose/llm/provider.h"

namespace kopt {

class Budget;

class LlmClient {
 public:
  /// `cache_dir` empty: no cache. `budget` may be null.
  LlmClient(std::unique_ptr<LlmProvider> provider, LlmConfig config,
            std::filesystem::path cache_dir, Budget* budget);
  ~LlmClient();
  /// Blocking; retries retryable errors up to config.max_retries with
  /// exponential backoff (honouring Retry-After); a cached reply returns
  /// at once with cached = true and charges nothing.
  LlmResult Complete(const LlmRequest& request);
  /// The same on a pool of at most config.max_in_flight threads.
  std::future<LlmResult> CompleteAsync(LlmRequest request);
  /// Counts for the run's log: requests, cache hits, retries, tokens.
  Json Stats() const;
  /// Replaces the wait between attempts (tests record it and return at once).
  void SetSleep(std::function<void(double seconds)> sleep);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The cache key: a hash of the provider, model and every request field.
std::string LlmRequestHash(const std::string& provider, const LlmRequest& request);

}  // namespace kopt
