// The LLM provider seam: one chat request in, one reply out, over any
// OpenAI-compatible chat-completions endpoint, Anthropic's Messages API, or
// a user's command (exec). Failures are values; retries, the reply cache and
// budget charging live in the client (client.h), not in each provider.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace kopt {

class Budget;

/// A tool the model may call (JSON-schema parameters).
struct LlmTool {
  std::string name;
  std::string description;
  Json parameters = Json::object();
};

struct LlmToolCall {
  std::string id;
  std::string name;
  /// The parsed object; a JSON string holding the raw text when the model's
  /// arguments were not JSON (for the caller to tell the model).
  Json arguments = Json::object();
};

struct LlmMessage {
  std::string role;  ///< "system", "user", "assistant", "tool"
  std::string content;
  std::vector<LlmToolCall> tool_calls;  ///< assistant turns that called tools
  std::string tool_call_id;             ///< tool turns: which call this answers
};

struct LlmRequest {
  std::string model;
  std::vector<LlmMessage> messages;
  std::vector<LlmTool> tools;
  int max_tokens = 8192;
  double temperature = 0.2;
};

struct LlmUsage {
  long long input_tokens = 0;
  long long output_tokens = 0;
  double cost_usd = 0;
};

struct LlmReply {
  std::string text;
  std::vector<LlmToolCall> tool_calls;
  std::string stop_reason;  ///< "stop", "length", "tool_calls", ...
  LlmUsage usage;
  bool cached = false;  ///< served from the reply cache
};

/// What went wrong, as a value. `retryable`: 429, 5xx, timeout, a stream cut
/// short; not 4xx other than 429, not a reply that cannot be parsed twice.
struct LlmError {
  std::string message;  ///< one sentence, never containing a key
  int http_status = 0;  ///< 0 when there was no HTTP reply
  bool retryable = false;
  /// The reply could be neither parsed as an event stream nor as JSON; the
  /// client tries such an endpoint once more, never twice.
  bool malformed = false;
  double retry_after_s = 0;  ///< from Retry-After, when given
  LlmUsage usage;            ///< what a failed attempt still cost, when reported
};

struct LlmResult {
  std::optional<LlmReply> reply;
  std::optional<LlmError> error;
  bool ok() const { return reply.has_value(); }
};

/// One endpoint. Implementations: openai (chat completions), anthropic
/// (messages), exec (a command reading the request on stdin).
class LlmProvider {
 public:
  virtual ~LlmProvider() = default;
  virtual std::string Name() const = 0;
  /// One attempt, streaming where the endpoint supports it; no retries here.
  virtual LlmResult Complete(const LlmRequest& request) = 0;
};

/// How to reach a model: from flags, else from the variables users already
/// set (KOPT_LLM = "provider:model" or "model", OPENAI_BASE_URL,
/// OPENAI_API_KEY, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL; KOPT_LLM_TIMEOUT_S).
struct LlmConfig {
  std::string provider;  ///< "openai", "anthropic", "exec"
  std::string model;
  std::string base_url;  ///< e.g. http://127.0.0.1:8000/v1
  std::string api_key;   ///< never logged, stored or reported
  std::string command;   ///< exec: the command line
  std::chrono::milliseconds connect_timeout{10000};
  /// One attempt, from sending to the last byte: long enough for a local
  /// model to stream max_tokens ($KOPT_LLM_TIMEOUT_S overrides it).
  std::chrono::milliseconds timeout{300000};
  int max_retries = 4;
  double backoff_initial_s = 1.0;
  int max_in_flight = 4;
  /// USD per million tokens, for the Budget; 0: cost not counted.
  double input_usd_per_mtok = 0;
  double output_usd_per_mtok = 0;
};

/// Reads KOPT_LLM, the provider variables and KOPT_LLM_COMMAND; flags given
/// non-empty win (flags.model may be "provider:model" too). Throws
/// kopt::Error, one sentence naming the variable to set, when the model, the
/// key or the command is missing. docs/llm.md has the rules.
LlmConfig LlmConfigFromEnv(LlmConfig flags);

/// The provider `config.provider` names; throws kopt::Error for another name.
std::unique_ptr<LlmProvider> MakeLlmProvider(const LlmConfig& config);

}  // namespace kopt
