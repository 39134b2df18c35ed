// One HTTP POST over libcurl whose reply body streams to a callback, with
// connect and total deadlines; the LLM providers' only way onto the network.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kopt {

struct HttpPostRequest {
  std::string url;
  std::vector<std::string> headers;  ///< "Name: value"
  std::string body;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds timeout{120000};  ///< the whole exchange
};

struct HttpPostResult {
  int status = 0;                              ///< 0: no HTTP reply at all
  std::map<std::string, std::string> headers;  ///< names lowercased, last value wins
  std::string body;                            ///< the whole body as received
  bool timed_out = false;
  bool transport_failed = false;  ///< connection refused, reset, cut mid-body, ...
  bool transport_retryable = false;
  std::string transport_error;  ///< libcurl's words, when transport_failed
};

/// Posts and hands each piece of the body to `on_body` as it arrives (it
/// also lands in result.body). Never throws for network failures.
HttpPostResult HttpPost(const HttpPostRequest& request,
                        const std::function<void(std::string_view)>& on_body = {});

/// Seconds a Retry-After (or retry-after-ms) header asks to wait; 0 if none.
double RetryAfterSeconds(const std::map<std::string, std::string>& headers);

}  // namespace kopt
