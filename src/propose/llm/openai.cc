// The OpenAI-compatible chat-completions provider: api.openai.com and every
// server speaking its format (vLLM, SGLang, llama.cpp server, Ollama's /v1).
#include <map>

#include "propose/llm/providers.h"
#include "propose/llm/sse.h"

namespace kopt {
namespace {

std::string StopReason(const std::string& finish, bool called_tools) {
  if (called_tools && (finish.empty() || finish == "stop")) return "tool_calls";
  if (finish.empty()) return "stop";
  return finish;  // "stop", "length", "tool_calls", "content_filter" already
}

Json ToolCallJson(const LlmToolCall& call) {
  return {{"id", call.id},
          {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", call.arguments.dump()}}}};
}

Json RequestBody(const LlmRequest& request, bool official_api) {
  Json messages = Json::array();
  for (const auto& m : request.messages) {
    Json j = {{"role", m.role}};
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      j["content"] = m.content.empty() ? Json(nullptr) : Json(m.content);
      j["tool_calls"] = Json::array();
      for (const auto& call : m.tool_calls) j["tool_calls"].push_back(ToolCallJson(call));
    } else {
      j["content"] = m.content;
    }
    if (m.role == "tool") j["tool_call_id"] = m.tool_call_id;
    messages.push_back(std::move(j));
  }
  Json body = {{"model", request.model},
               {"messages", std::move(messages)},
               {"temperature", request.temperature},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  // api.openai.com refuses max_tokens for its newer models; the servers that
  // copy its format all read max_tokens.
  body[official_api ? "max_completion_tokens" : "max_tokens"] = request.max_tokens;
  if (!request.tools.empty()) {
    Json tools = Json::array();
    for (const auto& t : request.tools)
      tools.push_back(
          {{"type", "function"},
           {"function",
            {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
    body["tools"] = std::move(tools);
  }
  return body;
}

// An {"error": {...}} object, in a 200 body or inside the stream.
LlmError ErrorObject(const std::string& url, const Json& error) {
  std::string message = error.is_object() ? error.value("message", "") : "";
  if (message.empty()) message = Snippet(error.dump());
  std::string kind;
  if (error.is_object()) {
    for (const char* key : {"type", "code"})
      if (error.contains(key) && error[key].is_string()) kind += error[key].get<std::string>();
  }
  LlmError e;
  e.message =
      "The openai endpoint " + DisplayUrl(url) + " reported an error: " + Snippet(message) + ".";
  e.retryable = kind.find("overloaded") != std::string::npos ||
                kind.find("server_error") != std::string::npos ||
                kind.find("rate_limit") != std::string::npos;
  return e;
}

LlmUsage UsageOf(const Json& usage) {
  LlmUsage u;
  if (!usage.is_object()) return u;
  u.input_tokens = static_cast<long long>(NumberOr(usage, "prompt_tokens"));
  u.output_tokens = static_cast<long long>(NumberOr(usage, "completion_tokens"));
  return u;
}

// The reply assembled from stream chunks (deltas) or one whole body.
struct Assembly {
  struct Call {
    std::string id, name, arguments;
  };
  std::string text;
  std::vector<Call> calls;
  std::map<long long, size_t> call_at_index;
  std::string finish;
  LlmUsage usage;
  bool done = false;      // [DONE] seen
  bool bad_data = false;  // a data line that is not JSON
  std::optional<Json> error;

  void Chunk(const Json& chunk) {
    if (!chunk.is_object()) {
      bad_data = true;
      return;
    }
    if (chunk.contains("error")) {
      error = chunk["error"];
      return;
    }
    if (chunk.contains("usage") && chunk["usage"].is_object()) usage = UsageOf(chunk["usage"]);
    if (!chunk.contains("choices") || !chunk["choices"].is_array()) return;
    for (const auto& choice : chunk["choices"]) {
      if (!choice.is_object() || static_cast<int>(NumberOr(choice, "index", 0)) != 0) continue;
      if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
        finish = choice["finish_reason"].get<std::string>();
      const Json* delta = nullptr;
      if (choice.contains("delta") && choice["delta"].is_object()) delta = &choice["delta"];
      if (!delta) continue;
      if (delta->contains("content") && (*delta)["content"].is_string())
        text += (*delta)["content"].get<std::string>();
      if (delta->contains("tool_calls") && (*delta)["tool_calls"].is_array())
        for (const auto& piece : (*delta)["tool_calls"]) CallPiece(piece);
    }
  }

  // Pieces of one call share an index; the first carries id and name, the
  // rest carry more of the arguments. Servers that omit the index send each
  // call whole, or continue the last one.
  void CallPiece(const Json& piece) {
    if (!piece.is_object()) return;
    std::string id =
        piece.contains("id") && piece["id"].is_string() ? piece["id"].get<std::string>() : "";
    Call* call = nullptr;
    if (piece.contains("index") && piece["index"].is_number_integer()) {
      long long index = piece["index"].get<long long>();
      auto it = call_at_index.find(index);
      if (it == call_at_index.end()) {
        it = call_at_index.emplace(index, calls.size()).first;
        calls.emplace_back();
      }
      call = &calls[it->second];
    } else if (!id.empty() || calls.empty()) {
      calls.emplace_back();
      call = &calls.back();
    } else {
      call = &calls.back();
    }
    if (!id.empty()) call->id = id;
    if (piece.contains("function") && piece["function"].is_object()) {
      const Json& f = piece["function"];
      if (f.contains("name") && f["name"].is_string()) call->name += f["name"].get<std::string>();
      if (f.contains("arguments")) {
        if (f["arguments"].is_string())
          call->arguments += f["arguments"].get<std::string>();
        else if (f["arguments"].is_object())
          call->arguments += f["arguments"].dump();
      }
    }
  }

  // A non-stream chat.completion body.
  void Whole(const Json& body) {
    if (body.contains("error")) {
      error = body["error"];
      return;
    }
    if (body.contains("usage")) usage = UsageOf(body["usage"]);
    if (!body.contains("choices") || !body["choices"].is_array() || body["choices"].empty()) {
      bad_data = true;
      return;
    }
    const Json& choice = body["choices"][0];
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      finish = choice["finish_reason"].get<std::string>();
    if (!choice.contains("message") || !choice["message"].is_object()) {
      bad_data = true;
      return;
    }
    const Json& message = choice["message"];
    if (message.contains("content") && message["content"].is_string())
      text = message["content"].get<std::string>();
    if (message.contains("tool_calls") && message["tool_calls"].is_array())
      for (const auto& piece : message["tool_calls"]) {
        Json whole = piece;
        whole.erase("index");
        CallPiece(whole);
      }
    done = true;
  }

  LlmReply Reply() const {
    LlmReply reply;
    reply.text = text;
    for (const auto& c : calls)
      reply.tool_calls.push_back({c.id, c.name, ParseToolArguments(c.arguments)});
    reply.stop_reason = StopReason(finish, !calls.empty());
    reply.usage = usage;
    return reply;
  }
};

class OpenAiProvider : public LlmProvider {
 public:
  explicit OpenAiProvider(LlmConfig config) : config_(std::move(config)) {
    while (!config_.base_url.empty() && config_.base_url.back() == '/') config_.base_url.pop_back();
  }
  std::string Name() const override { return "openai"; }
  LlmResult Complete(const LlmRequest& request) override {
    return Redacted(Attempt(request), config_.api_key);
  }

 private:
  LlmResult Attempt(const LlmRequest& request) {
    HttpPostRequest post;
    post.url = config_.base_url + "/chat/completions";
    bool official = post.url.find("://api.openai.com/") != std::string::npos;
    post.body = RequestBody(request, official).dump();
    post.headers = {"Content-Type: application/json", "Accept: text/event-stream"};
    if (!config_.api_key.empty())
      post.headers.push_back("Authorization: Bearer " + config_.api_key);
    post.connect_timeout = config_.connect_timeout;
    post.timeout = config_.timeout;

    Assembly assembly;
    SseParser sse([&](const SseEvent& event) {
      if (assembly.done) return;
      if (event.data == "[DONE]") {
        assembly.done = true;
        return;
      }
      try {
        assembly.Chunk(Json::parse(event.data));
      } catch (const Json::parse_error&) {
        assembly.bad_data = true;
      }
    });
    HttpPostResult http = HttpPost(post, [&](std::string_view bytes) { sse.Feed(bytes); });
    sse.Finish();
    RedactKey(&http, config_.api_key);

    return JudgeStreamedReply(Name(), post.url, config_.api_key, http, sse, assembly, ErrorObject,
                              "data: [DONE]");
  }

  LlmConfig config_;
};

}  // namespace

std::unique_ptr<LlmProvider> MakeOpenAiProvider(const LlmConfig& config) {
  return std::make_unique<OpenAiProvider>(config);
}

}  // namespace kopt
