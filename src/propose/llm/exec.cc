// The exec provider: the user's own command answers each request (a wrapper
// around a CLI, a local script, a model behind something that is not HTTP).
// The protocol is in docs/llm.md: the request as one JSON object on stdin,
// the reply on stdout as {"text", "tool_calls", ...} or plain text.
#include <fmt/format.h>

#include "core/subprocess.h"
#include "propose/llm/providers.h"

namespace kopt {
namespace {

// EX_TEMPFAIL (sysexits.h): the command says "try again later".
constexpr int kRetryableExit = 75;

Json RequestJson(const LlmRequest& request) {
  Json messages = Json::array();
  for (const auto& m : request.messages) {
    Json j = {{"role", m.role}, {"content", m.content}};
    if (!m.tool_calls.empty()) {
      j["tool_calls"] = Json::array();
      for (const auto& c : m.tool_calls)
        j["tool_calls"].push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
    }
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    messages.push_back(std::move(j));
  }
  Json tools = Json::array();
  for (const auto& t : request.tools)
    tools.push_back(
        {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}});
  return {{"model", request.model},
          {"messages", std::move(messages)},
          {"tools", std::move(tools)},
          {"max_tokens", request.max_tokens},
          {"temperature", request.temperature}};
}

std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, end - start + 1);
}

// A JSON object with "text" or "tool_calls" is a structured reply; any other
// output is the reply's text as printed.
std::optional<LlmReply> StructuredReply(const std::string& out) {
  size_t first = out.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || out[first] != '{') return std::nullopt;
  Json j;
  try {
    j = Json::parse(out);
  } catch (const Json::parse_error&) {
    return std::nullopt;
  }
  if (!j.is_object() || (!j.contains("text") && !j.contains("tool_calls"))) return std::nullopt;
  LlmReply reply;
  if (j.contains("text") && j["text"].is_string()) reply.text = j["text"];
  if (j.contains("tool_calls") && j["tool_calls"].is_array()) {
    int n = 0;
    for (const auto& c : j["tool_calls"]) {
      if (!c.is_object()) continue;
      LlmToolCall call;
      call.id = c.contains("id") && c["id"].is_string() ? c["id"].get<std::string>()
                                                        : fmt::format("call_{}", n);
      call.name = c.value("name", "");
      if (c.contains("arguments"))
        call.arguments =
            c["arguments"].is_string() ? ParseToolArguments(c["arguments"]) : c["arguments"];
      reply.tool_calls.push_back(std::move(call));
      ++n;
    }
  }
  reply.stop_reason = j.contains("stop_reason") && j["stop_reason"].is_string()
                          ? j["stop_reason"].get<std::string>()
                          : (reply.tool_calls.empty() ? "stop" : "tool_calls");
  if (j.contains("usage") && j["usage"].is_object()) {
    reply.usage.input_tokens = static_cast<long long>(NumberOr(j["usage"], "input_tokens"));
    reply.usage.output_tokens = static_cast<long long>(NumberOr(j["usage"], "output_tokens"));
    reply.usage.cost_usd = NumberOr(j["usage"], "cost_usd");
  }
  return reply;
}

class ExecProvider : public LlmProvider {
 public:
  explicit ExecProvider(LlmConfig config) : config_(std::move(config)) {}
  std::string Name() const override { return "exec"; }
  LlmResult Complete(const LlmRequest& request) override {
    return Redacted(Attempt(request), config_.api_key);
  }

 private:
  LlmResult Attempt(const LlmRequest& request) {
    ProcessOptions options;
    options.stdin_data = RequestJson(request).dump() + "\n";
    options.timeout_s = config_.timeout.count() / 1000.0;
    ProcessResult run = RunProcess({"/bin/sh", "-c", config_.command}, options);
    LlmResult result;
    LlmError error;
    if (run.spawn_failed) {
      error.message = "The exec provider could not start /bin/sh for KOPT_LLM_COMMAND.";
    } else if (run.timed_out) {
      error.message = fmt::format("The exec command gave no reply within {:.3g} s and was stopped.",
                                  options.timeout_s);
      error.retryable = true;
    } else if (run.term_signal != 0 || run.exit_code != 0) {
      std::string why = LastLine(RedactKey(run.err, config_.api_key));
      error.message = fmt::format(
          "The exec command failed ({}{}){}", run.term_signal ? "signal " : "exit ",
          run.term_signal ? run.term_signal : run.exit_code,
          why.empty() ? std::string(" and printed nothing on stderr.") : ": " + Snippet(why) + ".");
      error.retryable = run.term_signal == 0 && run.exit_code == kRetryableExit;
    } else if (BlankText(run.out)) {
      error.message = "The exec command exited 0 but printed no reply on stdout.";
      error.retryable = true;
      error.malformed = true;
    } else if (auto reply = StructuredReply(run.out)) {
      result.reply = std::move(*reply);
      return result;
    } else {
      LlmReply plain;
      plain.text = run.out;
      plain.stop_reason = "stop";
      result.reply = std::move(plain);
      return result;
    }
    result.error = std::move(error);
    return result;
  }

  LlmConfig config_;
};

}  // namespace

std::unique_ptr<LlmProvider> MakeExecProvider(const LlmConfig& config) {
  return std::make_unique<ExecProvider>(config);
}

}  // namespace kopt
