#include "propose/llm/http.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>

#include <curl/curl.h>

namespace kopt {
namespace {

// Replies are text; anything past this is not a chat reply.
constexpr size_t kMaxBodyBytes = 64u << 20;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  HttpPostResult* result;
  const std::function<void(std::string_view)>* on_body;
  bool status_seen = false;
};

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new status line (after 100 Continue or a redirect): start over.
    t->result->headers.clear();
    return size * n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  t->result->headers[name] = Trim(line.substr(colon + 1));
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  if (t->result->body.size() + bytes > kMaxBodyBytes) return 0;  // aborts the transfer
  t->result->body.append(data, bytes);
  if (*t->on_body) (*t->on_body)(std::string_view(data, bytes));
  return bytes;
}

bool Retryable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// The user's no_proxy list plus loopback (CURLOPT_NOPROXY replaces the
// variable, so both go in).
std::string NoProxyList() {
  std::string list = "localhost,127.0.0.1,::1";
  for (const char* name : {"no_proxy", "NO_PROXY"})
    if (const char* v = std::getenv(name); v && *v) {
      list += ",";
      list += v;
    }
  return list;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

HttpPostResult HttpPost(const HttpPostRequest& request,
                        const std::function<void(std::string_view)>& on_body) {
  GlobalInitOnce();
  HttpPostResult result;
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    result.transport_failed = true;
    result.transport_error = "libcurl could not start a transfer";
    return result;
  }
  curl_slist* raw_headers = nullptr;
  for (const auto& h : request.headers) raw_headers = curl_slist_append(raw_headers, h.c_str());
  // No "Expect: 100-continue" round trip for large prompts.
  raw_headers = curl_slist_append(raw_headers, "Expect:");
  std::unique_ptr<curl_slist, SlistDeleter> headers(raw_headers);

  Transfer transfer{&result, &on_body};
  char error_buffer[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(request.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // whatever libcurl can decode
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  // Proxies from the environment apply, but never to a server on this machine.
  std::string no_proxy = NoProxyList();
  curl_easy_setopt(c, CURLOPT_NOPROXY, no_proxy.c_str());

  CURLcode code = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  result.status = static_cast<int>(status);
  if (code != CURLE_OK) {
    result.transport_failed = true;
    result.timed_out = code == CURLE_OPERATION_TIMEDOUT;
    result.transport_retryable = Retryable(code);
    result.transport_error = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
  }
  return result;
}

double RetryAfterSeconds(const std::map<std::string, std::string>& headers) {
  if (auto it = headers.find("retry-after-ms"); it != headers.end()) {
    char* end = nullptr;
    double ms = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && ms > 0) return ms / 1000.0;
  }
  auto it = headers.find("retry-after");
  if (it == headers.end()) return 0;
  char* end = nullptr;
  double s = std::strtod(it->second.c_str(), &end);
  if (end != it->second.c_str() && *end == '\0') return std::max(0.0, s);
  // An HTTP date.
  time_t when = curl_getdate(it->second.c_str(), nullptr);
  if (when <= 0) return 0;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

}  // namespace kopt
