// The concrete providers behind MakeLlmProvider, and what they share: turning
// an HTTP failure into an LlmError and keeping the key out of every message.
//
// How to add a provider: write <name>.cc with a class implementing LlmProvider
// (one attempt per Complete, failures as LlmError values, every message passed
// through RedactKey), declare its factory here, add its name to
// MakeLlmProvider and LlmConfigFromEnv (provider.cc), and test it against
// tests/testing/llm_server.h in provider_test.cc. docs/llm.md says more.
#pragma once

#include <memory>
#include <string>

#include "propose/llm/http.h"
#include "propose/llm/provider.h"
#include "propose/llm/sse.h"

namespace kopt {

std::unique_ptr<LlmProvider> MakeOpenAiProvider(const LlmConfig& config);
std::unique_ptr<LlmProvider> MakeAnthropicProvider(const LlmConfig& config);
std::unique_ptr<LlmProvider> MakeExecProvider(const LlmConfig& config);

/// `text` with every occurrence of `key` replaced by "[redacted]".
std::string RedactKey(std::string text, const std::string& key);

/// The same over a reply's body, headers and libcurl's message, before any
/// of them is quoted (a snippet could otherwise cut a key in half).
void RedactKey(HttpPostResult* http, const std::string& key);

/// The URL without user:password@ or a query string, for messages.
std::string DisplayUrl(const std::string& url);

/// At most `max_chars` of `text` on one line, for quoting a server in a message.
std::string Snippet(const std::string& text, size_t max_chars = 160);

/// The error an HTTP exchange ended in: a transport failure, a timeout or a
/// non-2xx status (with the server's own message when its body says one).
/// Only for results that are not a 2xx with a body to parse.
LlmError HttpFailure(const std::string& provider, const std::string& url,
                     const HttpPostResult& http);

/// The error for a 2xx body that is neither a complete stream nor JSON.
LlmError MalformedReply(const std::string& provider, const std::string& url,
                        const std::string& body);

/// The error for a stream that ended before its terminal event.
LlmError TruncatedReply(const std::string& provider, const std::string& url,
                        const std::string& terminal);

/// `message` error fields through RedactKey.
LlmResult Redacted(LlmResult result, const std::string& key);

/// True when a 2xx body is one JSON document (a content type saying so, or a
/// body starting with '{'), not an event stream.
bool LooksLikeJsonBody(const HttpPostResult& http);
bool BlankText(const std::string& text);

/// What one streamed exchange came to, the same rule for every SSE
/// provider: an HTTP failure (a connection dropped after the terminal event
/// lost nothing), a plain JSON body read whole, the endpoint's own error
/// object, a malformed or truncated stream, or the reply. `assembly` holds
/// what the events built (done, bad_data, error, usage; Whole(body),
/// Reply()); `error_of(url, error)` reads the endpoint's error object;
/// `terminal` names the event that ends a complete stream. `http` must
/// already be redacted.
template <class Assembly, class ErrorOf>
LlmResult JudgeStreamedReply(const std::string& provider, const std::string& url,
                             const std::string& key, const HttpPostResult& http,
                             const SseParser& sse, Assembly& assembly, ErrorOf error_of,
                             const std::string& terminal) {
  LlmResult result;
  const bool success = http.status >= 200 && http.status < 300;
  if (!success || (http.transport_failed && !assembly.done)) {
    result.error = HttpFailure(provider, url, http);
    result.error->usage = assembly.usage;
    return result;
  }
  if (sse.events() == 0 && LooksLikeJsonBody(http)) {
    try {
      assembly = Assembly{};
      assembly.Whole(Json::parse(http.body));
    } catch (const Json::parse_error&) {
      assembly.bad_data = true;
    }
  }
  if (assembly.error) {
    result.error = error_of(url, Json::parse(RedactKey(assembly.error->dump(), key)));
  } else if (assembly.bad_data || sse.foreign_lines() > 0 ||
             (sse.events() == 0 && !assembly.done && !BlankText(http.body))) {
    result.error = MalformedReply(provider, url, http.body);
  } else if (!assembly.done) {
    result.error = TruncatedReply(provider, url, terminal);
  } else {
    result.reply = assembly.Reply();
    return result;
  }
  result.error->usage = assembly.usage;
  return result;
}

/// A tool call's arguments: the object when `text` is JSON, else the raw
/// text as a JSON string (the model's mistake, for the caller to report).
Json ParseToolArguments(const std::string& text);

}  // namespace kopt
