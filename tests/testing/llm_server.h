// A real HTTP/1.1 server on 127.0.0.1 that answers LLM requests from a
// script, for testing the providers and anything built on them end to end.
//
//   kopt::testing::LlmTestServer server;
//   server.Script({LlmScriptedReply::OpenAi("hello"),
//                  LlmScriptedReply::Status(429, "slow down", /*retry_after_s=*/2)});
//   config.base_url = server.base_url() + "/v1";   // openai; anthropic: base_url()
//   ... run the client ...
//   EXPECT_EQ(server.requests().size(), 2u);       // what was sent, headers and body
//
// Each request takes the first scripted reply whose `match` occurs in the
// request's last user message, else the first reply without a `match`, in
// script order; each reply is served once. A request with none left gets
// HTTP 400 {"error": {"message": "llm test server: ..."}} (not retried).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"

namespace kopt::testing {

struct ScriptedToolCall {
  std::string id;
  std::string name;
  Json arguments = Json::object();
};

/// One reply: a status, headers and a body sent in pieces.
struct LlmScriptedReply {
  enum class Framing { kChunked, kClose, kLength };

  std::string match;  ///< served when the last user message contains this
  std::string label;  ///< a name for logs (the request that got it records it)
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> chunks;  ///< the body, flushed piece by piece
  Framing framing = Framing::kChunked;
  double delay_s = 0;        ///< before the status line
  double chunk_delay_s = 0;  ///< between pieces
  bool cut = false;          ///< drop the connection before the body's end

  /// An OpenAI chat-completions stream: text deltas, tool calls whose id and
  /// name come first and whose arguments arrive in several pieces, a usage
  /// chunk (include_usage), then `data: [DONE]` as the last piece.
  static LlmScriptedReply OpenAi(const std::string& text, std::vector<ScriptedToolCall> calls = {},
                                 long long input_tokens = 10, long long output_tokens = 20);
  /// An Anthropic messages stream: message_start (input usage), a ping, text
  /// and tool_use blocks (input_json_delta pieces), message_delta (stop
  /// reason, output usage), then message_stop as the last piece.
  static LlmScriptedReply Anthropic(const std::string& text,
                                    std::vector<ScriptedToolCall> calls = {},
                                    long long input_tokens = 10, long long output_tokens = 20);
  /// An error status with a JSON error body; Retry-After when >= 0.
  static LlmScriptedReply Status(int status, const std::string& message, double retry_after_s = -1);
  /// 200 with bytes that are neither an event stream nor JSON.
  static LlmScriptedReply Garbage();
  /// 200 (or `status`) with one JSON document and a Content-Length.
  static LlmScriptedReply JsonBody(const Json& body, int status = 200);

  /// The same, without its last piece (the stream's terminal event); the
  /// HTTP body still ends cleanly.
  LlmScriptedReply Truncated() const;
  /// The same, with the connection dropped before the HTTP body's end (no
  /// closing chunk; or fewer bytes than the Content-Length said).
  LlmScriptedReply Cut() const;
  /// The same, waiting `seconds` before answering.
  LlmScriptedReply Delayed(double seconds) const;
  /// The same, served only to a request whose last user message has `text`.
  LlmScriptedReply Matching(const std::string& text) const;
};

struct LlmRecordedRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  ///< names lowercased
  std::string body;
  Json json;  ///< the parsed body; null when it is not JSON
  std::string last_user_message;
  std::string served;  ///< the label of the reply it got; "(none left)" for the 400
  double at_s = 0;     ///< when it arrived, in seconds since the server started
};

class LlmTestServer {
 public:
  /// Listens on 127.0.0.1 at `port` (0: an ephemeral one), serving from its
  /// own thread.
  explicit LlmTestServer(int port = 0);
  ~LlmTestServer();
  LlmTestServer(const LlmTestServer&) = delete;
  LlmTestServer& operator=(const LlmTestServer&) = delete;

  /// Appends replies to the script.
  void Script(std::vector<LlmScriptedReply> replies);
  /// "http://127.0.0.1:PORT" (OpenAI-compatible clients add "/v1").
  std::string base_url() const;
  /// Every request received so far, in arrival order.
  std::vector<LlmRecordedRequest> requests() const;
  /// The most requests being answered at one time.
  int max_concurrent() const;
  /// Scripted replies not served yet.
  size_t unserved() const;
  /// Their labels, in script order.
  std::vector<std::string> unserved_labels() const;

 private:
  void AcceptLoop();
  void Serve(int fd);
  bool Wait(double seconds);  // false when the server is stopping

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  std::vector<std::thread> connections_;
  std::vector<LlmScriptedReply> script_;
  std::vector<LlmRecordedRequest> requests_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace kopt::testing
