#include "testing/llm_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace kopt::testing {
namespace {

constexpr int kPollMs = 50;
constexpr size_t kMaxRequestBytes = 64u << 20;

std::string SseData(const Json& j) { return "data: " + j.dump() + "\n\n"; }

std::string SseEvent(const std::string& name, const Json& j) {
  return "event: " + name + "\ndata: " + j.dump() + "\n\n";
}

// Splits `s` into about `n` pieces (at least one character each).
std::vector<std::string> Pieces(const std::string& s, size_t n) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t step = std::max<size_t>(1, (s.size() + n - 1) / n);
  for (size_t at = 0; at < s.size(); at += step) out.push_back(s.substr(at, step));
  return out;
}

std::string LastUserMessage(const Json& body) {
  if (!body.is_object() || !body.contains("messages") || !body["messages"].is_array()) return "";
  for (auto it = body["messages"].rbegin(); it != body["messages"].rend(); ++it) {
    if (!it->is_object() || it->value("role", "") != "user") continue;
    const Json& content = (*it)["content"];
    if (content.is_string()) return content;
    std::string text;
    if (content.is_array())
      for (const auto& block : content) {
        if (!block.is_object()) continue;
        if (block.contains("text") && block["text"].is_string()) text += block["text"];
        if (block.contains("content") && block["content"].is_string()) text += block["content"];
      }
    return text;
  }
  return "";
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

}  // namespace

LlmScriptedReply LlmScriptedReply::OpenAi(const std::string& text,
                                          std::vector<ScriptedToolCall> calls,
                                          long long input_tokens, long long output_tokens) {
  LlmScriptedReply r;
  r.headers = {{"Content-Type", "text/event-stream"}};
  auto chunk = [](Json delta, Json finish = nullptr) {
    return Json{
        {"id", "chatcmpl-test"},
        {"object", "chat.completion.chunk"},
        {"model", "test-model"},
        {"choices", {{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", finish}}}}};
  };
  // The first event arrives split mid-line, as TCP may deliver it.
  std::string first = SseData(chunk({{"role", "assistant"}, {"content", ""}}));
  r.chunks.push_back(first.substr(0, first.size() / 2));
  r.chunks.push_back(first.substr(first.size() / 2));
  for (const auto& piece : Pieces(text, 3))
    r.chunks.push_back(SseData(chunk({{"content", piece}})));
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto& c = calls[i];
    r.chunks.push_back(SseData(chunk({{"tool_calls",
                                       {{{"index", i},
                                         {"id", c.id},
                                         {"type", "function"},
                                         {"function", {{"name", c.name}, {"arguments", ""}}}}}}})));
    for (const auto& piece : Pieces(c.arguments.dump(), 3))
      r.chunks.push_back(
          SseData(chunk({{"tool_calls", {{{"index", i}, {"function", {{"arguments", piece}}}}}}})));
  }
  r.chunks.push_back(SseData(chunk(Json::object(), calls.empty() ? "stop" : "tool_calls")));
  r.chunks.push_back(SseData({{"id", "chatcmpl-test"},
                              {"object", "chat.completion.chunk"},
                              {"choices", Json::array()},
                              {"usage",
                               {{"prompt_tokens", input_tokens},
                                {"completion_tokens", output_tokens},
                                {"total_tokens", input_tokens + output_tokens}}}}));
  r.chunks.push_back("data: [DONE]\n\n");
  return r;
}

LlmScriptedReply LlmScriptedReply::Anthropic(const std::string& text,
                                             std::vector<ScriptedToolCall> calls,
                                             long long input_tokens, long long output_tokens) {
  LlmScriptedReply r;
  r.headers = {{"Content-Type", "text/event-stream"}};
  r.chunks.push_back(SseEvent(
      "message_start", {{"type", "message_start"},
                        {"message",
                         {{"id", "msg_test"},
                          {"type", "message"},
                          {"role", "assistant"},
                          {"model", "test-model"},
                          {"content", Json::array()},
                          {"stop_reason", nullptr},
                          {"usage", {{"input_tokens", input_tokens}, {"output_tokens", 1}}}}}}));
  r.chunks.push_back(SseEvent("ping", {{"type", "ping"}}));
  int index = 0;
  if (!text.empty()) {
    r.chunks.push_back(
        SseEvent("content_block_start", {{"type", "content_block_start"},
                                         {"index", index},
                                         {"content_block", {{"type", "text"}, {"text", ""}}}}));
    for (const auto& piece : Pieces(text, 3))
      r.chunks.push_back(
          SseEvent("content_block_delta", {{"type", "content_block_delta"},
                                           {"index", index},
                                           {"delta", {{"type", "text_delta"}, {"text", piece}}}}));
    r.chunks.push_back(
        SseEvent("content_block_stop", {{"type", "content_block_stop"}, {"index", index}}));
    ++index;
  }
  for (const auto& c : calls) {
    r.chunks.push_back(SseEvent(
        "content_block_start",
        {{"type", "content_block_start"},
         {"index", index},
         {"content_block",
          {{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", Json::object()}}}}));
    for (const auto& piece : Pieces(c.arguments.dump(), 3))
      r.chunks.push_back(
          SseEvent("content_block_delta",
                   {{"type", "content_block_delta"},
                    {"index", index},
                    {"delta", {{"type", "input_json_delta"}, {"partial_json", piece}}}}));
    r.chunks.push_back(
        SseEvent("content_block_stop", {{"type", "content_block_stop"}, {"index", index}}));
    ++index;
  }
  r.chunks.push_back(SseEvent(
      "message_delta",
      {{"type", "message_delta"},
       {"delta",
        {{"stop_reason", calls.empty() ? "end_turn" : "tool_use"}, {"stop_sequence", nullptr}}},
       {"usage", {{"output_tokens", output_tokens}}}}));
  r.chunks.push_back(SseEvent("message_stop", {{"type", "message_stop"}}));
  return r;
}

LlmScriptedReply LlmScriptedReply::Status(int status, const std::string& message,
                                          double retry_after_s) {
  LlmScriptedReply r;
  r.status = status;
  r.framing = Framing::kLength;
  r.headers = {{"Content-Type", "application/json"}};
  if (retry_after_s >= 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", retry_after_s);
    r.headers.push_back({"Retry-After", buf});
  }
  r.chunks = {Json{{"error", {{"message", message}, {"type", "test_error"}}}}.dump()};
  return r;
}

LlmScriptedReply LlmScriptedReply::Garbage() {
  LlmScriptedReply r;
  r.headers = {{"Content-Type", "text/html"}};
  r.chunks = {std::string("<html>\x01\xfe\xff not a stream\n", 25), "<body>oops</body></html>\n\n"};
  return r;
}

LlmScriptedReply LlmScriptedReply::JsonBody(const Json& body, int status) {
  LlmScriptedReply r;
  r.status = status;
  r.framing = Framing::kLength;
  r.headers = {{"Content-Type", "application/json"}};
  r.chunks = {body.dump()};
  return r;
}

LlmScriptedReply LlmScriptedReply::Truncated() const {
  LlmScriptedReply r = *this;
  if (!r.chunks.empty()) r.chunks.pop_back();
  return r;
}

LlmScriptedReply LlmScriptedReply::Cut() const {
  LlmScriptedReply r = *this;
  r.cut = true;
  return r;
}

LlmScriptedReply LlmScriptedReply::Delayed(double seconds) const {
  LlmScriptedReply r = *this;
  r.delay_s = seconds;
  return r;
}

LlmScriptedReply LlmScriptedReply::Matching(const std::string& text) const {
  LlmScriptedReply r = *this;
  r.match = text;
  return r;
}

LlmTestServer::LlmTestServer(int port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("llm test server: socket() failed");
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error(std::string("llm test server: bind/listen failed: ") +
                             std::strerror(errno));
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

LlmTestServer::~LlmTestServer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  accept_thread_.join();
  ::close(listen_fd_);
  // No new connections now; the list is ours alone.
  for (auto& t : connections_) t.join();
}

void LlmTestServer::Script(std::vector<LlmScriptedReply> replies) {
  std::lock_guard lock(mu_);
  for (auto& r : replies) script_.push_back(std::move(r));
}

std::string LlmTestServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<LlmRecordedRequest> LlmTestServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

int LlmTestServer::max_concurrent() const {
  std::lock_guard lock(mu_);
  return max_in_flight_;
}

size_t LlmTestServer::unserved() const {
  std::lock_guard lock(mu_);
  return script_.size();
}

std::vector<std::string> LlmTestServer::unserved_labels() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& r : script_) out.push_back(r.label);
  return out;
}

bool LlmTestServer::Wait(double seconds) {
  std::unique_lock lock(mu_);
  return !stop_cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                            [&] { return stopping_.load(); });
}

void LlmTestServer::AcceptLoop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mu_);
    connections_.emplace_back([this, fd] { Serve(fd); });
  }
}

void LlmTestServer::Serve(int fd) {
  // Read the head, then Content-Length bytes of body.
  std::string data;
  size_t head_end = std::string::npos;
  size_t body_length = 0;
  auto read_more = [&]() {
    pollfd p{fd, POLLIN, 0};
    while (!stopping_) {
      int ready = ::poll(&p, 1, kPollMs);
      if (ready < 0) return false;
      if (ready == 0) continue;
      char buf[65536];
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      data.append(buf, static_cast<size_t>(n));
      return data.size() <= kMaxRequestBytes;
    }
    return false;
  };
  LlmRecordedRequest request;
  while ((head_end = data.find("\r\n\r\n")) == std::string::npos)
    if (!read_more()) {
      ::close(fd);
      return;
    }
  {
    std::string head = data.substr(0, head_end);
    size_t line_end = head.find("\r\n");
    std::string first = head.substr(0, line_end);
    size_t sp1 = first.find(' '), sp2 = first.rfind(' ');
    request.method = first.substr(0, sp1);
    request.path = first.substr(sp1 + 1, sp2 - sp1 - 1);
    size_t at = line_end == std::string::npos ? head.size() : line_end + 2;
    while (at < head.size()) {
      size_t end = head.find("\r\n", at);
      if (end == std::string::npos) end = head.size();
      std::string line = head.substr(at, end - at);
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        size_t v = line.find_first_not_of(' ', colon + 1);
        request.headers[name] = v == std::string::npos ? "" : line.substr(v);
      }
      at = end + 2;
    }
    if (auto it = request.headers.find("content-length"); it != request.headers.end())
      body_length = std::stoul(it->second);
  }
  while (data.size() < head_end + 4 + body_length)
    if (!read_more()) {
      ::close(fd);
      return;
    }
  request.body = data.substr(head_end + 4, body_length);
  request.json = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (request.json.is_discarded()) request.json = nullptr;
  request.last_user_message = LastUserMessage(request.json);
  request.at_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();

  LlmScriptedReply reply;
  {
    std::lock_guard lock(mu_);
    max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    auto it = std::find_if(script_.begin(), script_.end(), [&](const LlmScriptedReply& r) {
      return !r.match.empty() && request.last_user_message.find(r.match) != std::string::npos;
    });
    if (it == script_.end())
      it = std::find_if(script_.begin(), script_.end(),
                        [](const LlmScriptedReply& r) { return r.match.empty(); });
    if (it != script_.end()) {
      reply = std::move(*it);
      script_.erase(it);
      request.served = reply.label;
    } else {
      reply =
          LlmScriptedReply::Status(400, "llm test server: no scripted reply left for this request");
      request.served = "(none left)";
    }
    requests_.push_back(std::move(request));
  }

  if (reply.delay_s <= 0 || Wait(reply.delay_s)) {
    std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " + Reason(reply.status) +
                       "\r\nConnection: close\r\n";
    for (const auto& [name, value] : reply.headers) head += name + ": " + value + "\r\n";
    size_t total = 0;
    for (const auto& c : reply.chunks) total += c.size();
    if (reply.framing == LlmScriptedReply::Framing::kChunked)
      head += "Transfer-Encoding: chunked\r\n";
    if (reply.framing == LlmScriptedReply::Framing::kLength)
      head += "Content-Length: " + std::to_string(total + (reply.cut ? 100 : 0)) + "\r\n";
    head += "\r\n";
    bool ok = SendAll(fd, head);
    for (size_t i = 0; ok && i < reply.chunks.size(); ++i) {
      const std::string& c = reply.chunks[i];
      if (i > 0 && reply.chunk_delay_s > 0 && !Wait(reply.chunk_delay_s)) ok = false;
      if (!ok || c.empty()) continue;
      if (reply.framing == LlmScriptedReply::Framing::kChunked) {
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", c.size());
        ok = SendAll(fd, size + c + "\r\n");
      } else {
        ok = SendAll(fd, c);
      }
    }
    if (ok && !reply.cut && reply.framing == LlmScriptedReply::Framing::kChunked)
      SendAll(fd, "0\r\n\r\n");
  }
  {
    std::lock_guard lock(mu_);
    --in_flight_;
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

}  // namespace kopt::testing
