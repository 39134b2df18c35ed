// The Anthropic Messages API provider (POST /v1/messages, streamed).
#include <map>

#include "propose/llm/providers.h"
#include "propose/llm/sse.h"

namespace kopt {
namespace {

constexpr const char* kApiVersion = "2023-06-01";

std::string StopReason(const std::string& stop) {
  if (stop == "end_turn" || stop == "stop_sequence" || stop.empty()) return "stop";
  if (stop == "max_tokens") return "length";
  if (stop == "tool_use") return "tool_calls";
  return stop;
}

// Anthropic wants the system prompt apart, tool results as user turns, and
// roles that alternate: consecutive turns of one role become one turn.
Json RequestBody(const LlmRequest& request) {
  std::string system;
  Json messages = Json::array();
  auto append = [&](const std::string& role, Json blocks) {
    if (blocks.empty()) return;
    if (!messages.empty() && messages.back()["role"] == role) {
      for (auto& b : blocks) messages.back()["content"].push_back(std::move(b));
    } else {
      messages.push_back({{"role", role}, {"content", std::move(blocks)}});
    }
  };
  for (const auto& m : request.messages) {
    Json blocks = Json::array();
    if (m.role == "system") {
      if (!system.empty()) system += "\n\n";
      system += m.content;
      continue;
    }
    if (m.role == "tool") {
      blocks.push_back(
          {{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}});
      append("user", std::move(blocks));
      continue;
    }
    if (!m.content.empty()) blocks.push_back({{"type", "text"}, {"text", m.content}});
    if (m.role == "assistant") {
      for (const auto& call : m.tool_calls)
        blocks.push_back({{"type", "tool_use"},
                          {"id", call.id},
                          {"name", call.name},
                          {"input", call.arguments.is_object() ? call.arguments : Json::object()}});
      append("assistant", std::move(blocks));
    } else {
      append("user", std::move(blocks));
    }
  }
  Json body = {{"model", request.model},
               {"max_tokens", request.max_tokens},
               {"temperature", request.temperature},
               {"messages", std::move(messages)},
               {"stream", true}};
  if (!system.empty()) body["system"] = system;
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const auto& t : request.tools)
      tools.push_back(
          {{"name", t.name}, {"description", t.description}, {"input_schema", t.parameters}});
    body["tools"] = std::move(tools);
  }
  return body;
}

LlmError ErrorObject(const std::string& url, const Json& error) {
  std::string type = error.is_object() ? error.value("type", "") : "";
  std::string message = error.is_object() ? error.value("message", "") : "";
  if (message.empty()) message = Snippet(error.dump());
  LlmError e;
  e.message = "The anthropic endpoint " + DisplayUrl(url) + " reported " +
              (type.empty() ? std::string("an error") : type) + ": " + Snippet(message) + ".";
  e.retryable = type == "overloaded_error" || type == "api_error" || type == "rate_limit_error";
  return e;
}

struct Assembly {
  struct Block {
    std::string type, text, id, name, input_json;
    Json input = Json::object();  // a tool_use block's input when it came whole
  };
  std::map<long long, Block> blocks;
  std::string stop;
  LlmUsage usage;
  bool done = false;
  bool bad_data = false;
  std::optional<Json> error;

  void Usage(const Json& u) {
    if (!u.is_object()) return;
    long long input = static_cast<long long>(NumberOr(u, "input_tokens") +
                                             NumberOr(u, "cache_creation_input_tokens") +
                                             NumberOr(u, "cache_read_input_tokens"));
    usage.input_tokens = std::max(usage.input_tokens, input);
    usage.output_tokens =
        std::max(usage.output_tokens, static_cast<long long>(NumberOr(u, "output_tokens")));
  }

  void StartBlock(long long index, const Json& block) {
    Block b;
    if (block.is_object()) {
      b.type = block.value("type", "");
      if (block.contains("text") && block["text"].is_string()) b.text = block["text"];
      if (block.contains("id") && block["id"].is_string()) b.id = block["id"];
      if (block.contains("name") && block["name"].is_string()) b.name = block["name"];
      if (block.contains("input") && block["input"].is_object()) b.input = block["input"];
    }
    blocks[index] = std::move(b);
  }

  void Event(const Json& e) {
    if (!e.is_object()) {
      bad_data = true;
      return;
    }
    std::string type = e.value("type", "");
    long long index = static_cast<long long>(NumberOr(e, "index", 0));
    if (type == "message_start") {
      if (e.contains("message") && e["message"].is_object() && e["message"].contains("usage"))
        Usage(e["message"]["usage"]);
    } else if (type == "content_block_start") {
      StartBlock(index, e.contains("content_block") ? e["content_block"] : Json());
    } else if (type == "content_block_delta") {
      const Json& d = e.contains("delta") ? e["delta"] : Json();
      Block& b = blocks[index];
      std::string kind = d.is_object() ? d.value("type", "") : "";
      if (kind == "text_delta" && d.contains("text") && d["text"].is_string())
        b.text += d["text"].get<std::string>();
      else if (kind == "input_json_delta" && d.contains("partial_json") &&
               d["partial_json"].is_string())
        b.input_json += d["partial_json"].get<std::string>();
    } else if (type == "message_delta") {
      if (e.contains("delta") && e["delta"].is_object() && e["delta"].contains("stop_reason") &&
          e["delta"]["stop_reason"].is_string())
        stop = e["delta"]["stop_reason"];
      if (e.contains("usage")) Usage(e["usage"]);
    } else if (type == "message_stop") {
      done = true;
    } else if (type == "error") {
      error = e.contains("error") ? e["error"] : e;
    }
    // ping, content_block_stop and event types added later: nothing to do.
  }

  void Whole(const Json& body) {
    if (!body.is_object()) {
      bad_data = true;
      return;
    }
    if (body.value("type", "") == "error") {
      error = body.contains("error") ? body["error"] : body;
      return;
    }
    if (!body.contains("content") || !body["content"].is_array()) {
      bad_data = true;
      return;
    }
    long long index = 0;
    for (const auto& block : body["content"]) StartBlock(index++, block);
    if (body.contains("stop_reason") && body["stop_reason"].is_string()) stop = body["stop_reason"];
    if (body.contains("usage")) Usage(body["usage"]);
    done = true;
  }

  LlmReply Reply() const {
    LlmReply reply;
    for (const auto& [index, b] : blocks) {
      if (b.type == "text") reply.text += b.text;
      if (b.type == "tool_use")
        reply.tool_calls.push_back(
            {b.id, b.name, b.input_json.empty() ? b.input : ParseToolArguments(b.input_json)});
    }
    reply.stop_reason = StopReason(stop);
    reply.usage = usage;
    return reply;
  }
};

class AnthropicProvider : public LlmProvider {
 public:
  explicit AnthropicProvider(LlmConfig config) : config_(std::move(config)) {
    while (!config_.base_url.empty() && config_.base_url.back() == '/') config_.base_url.pop_back();
  }
  std::string Name() const override { return "anthropic"; }
  LlmResult Complete(const LlmRequest& request) override {
    return Redacted(Attempt(request), config_.api_key);
  }

 private:
  LlmResult Attempt(const LlmRequest& request) {
    HttpPostRequest post;
    post.url = config_.base_url + "/v1/messages";
    post.body = RequestBody(request).dump();
    post.headers = {"Content-Type: application/json", "Accept: text/event-stream",
                    std::string("anthropic-version: ") + kApiVersion};
    if (!config_.api_key.empty()) post.headers.push_back("x-api-key: " + config_.api_key);
    post.connect_timeout = config_.connect_timeout;
    post.timeout = config_.timeout;

    Assembly assembly;
    SseParser sse([&](const SseEvent& event) {
      if (assembly.done) return;
      try {
        assembly.Event(Json::parse(event.data));
      } catch (const Json::parse_error&) {
        assembly.bad_data = true;
      }
    });
    HttpPostResult http = HttpPost(post, [&](std::string_view bytes) { sse.Feed(bytes); });
    sse.Finish();
    RedactKey(&http, config_.api_key);

    return JudgeStreamedReply(Name(), post.url, config_.api_key, http, sse, assembly, ErrorObject,
                              "message_stop");
  }

  LlmConfig config_;
};

}  // namespace

std::unique_ptr<LlmProvider> MakeAnthropicProvider(const LlmConfig& config) {
  return std::make_unique<AnthropicProvider>(config);
}

}  // namespace kopt
