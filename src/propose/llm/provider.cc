#include "propose/llm/provider.h"

#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"
#include "propose/llm/providers.h"

namespace kopt {
namespace {

constexpr const char* kOpenAiDefaultUrl = "https://api.openai.com/v1";
constexpr const char* kAnthropicDefaultUrl = "https://api.anthropic.com";

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool KnownProvider(const std::string& name) {
  return name == "openai" || name == "anthropic" || name == "exec";
}

// "provider:model" when the prefix names a provider; otherwise the whole text
// is the model (Ollama's "qwen2.5-coder:32b" has a colon of its own).
void SplitSpec(const std::string& spec, std::string* provider, std::string* model) {
  auto colon = spec.find(':');
  if (colon != std::string::npos && KnownProvider(spec.substr(0, colon))) {
    *provider = spec.substr(0, colon);
    *model = spec.substr(colon + 1);
  } else {
    *model = spec;
  }
}

std::string FirstNonEmpty(std::initializer_list<std::string> values) {
  for (const auto& v : values)
    if (!v.empty()) return v;
  return "";
}

}  // namespace

LlmConfig LlmConfigFromEnv(LlmConfig flags) {
  LlmConfig c = flags;
  std::string flag_provider = flags.provider, flag_model;
  SplitSpec(flags.model, &flag_provider, &flag_model);
  if (!flags.provider.empty()) flag_provider = flags.provider;
  std::string env_provider, env_model;
  SplitSpec(Env("KOPT_LLM"), &env_provider, &env_model);

  c.provider = FirstNonEmpty({flag_provider, env_provider});
  c.model = FirstNonEmpty({flag_model, env_model});
  c.command = FirstNonEmpty({flags.command, Env("KOPT_LLM_COMMAND")});
  bool openai_env = !Env("OPENAI_API_KEY").empty() || !Env("OPENAI_BASE_URL").empty();
  if (c.provider.empty()) {
    if (!Env("ANTHROPIC_API_KEY").empty() && !openai_env)
      c.provider = "anthropic";
    else if (!c.command.empty() && !openai_env && flags.base_url.empty())
      c.provider = "exec";
    else
      c.provider = "openai";
  }
  if (!KnownProvider(c.provider))
    throw Error(fmt::format(
        "Unknown LLM provider '{}': use openai, anthropic or exec (KOPT_LLM=provider:model).",
        c.provider));

  if (c.provider == "openai") {
    c.base_url = FirstNonEmpty({flags.base_url, Env("OPENAI_BASE_URL"), kOpenAiDefaultUrl});
    c.api_key = FirstNonEmpty({flags.api_key, Env("OPENAI_API_KEY")});
  } else if (c.provider == "anthropic") {
    c.base_url = FirstNonEmpty({flags.base_url, Env("ANTHROPIC_BASE_URL"), kAnthropicDefaultUrl});
    c.api_key = FirstNonEmpty({flags.api_key, Env("ANTHROPIC_API_KEY")});
  }

  if (std::string t = Env("KOPT_LLM_TIMEOUT_S"); !t.empty()) {
    char* end = nullptr;
    double seconds = std::strtod(t.c_str(), &end);
    if (end == t.c_str() || *end != '\0' || !(seconds > 0) || seconds > 86400)
      throw Error(fmt::format(
          "KOPT_LLM_TIMEOUT_S is '{}': set it to the seconds one LLM attempt may take (e.g. 300).",
          t));
    c.timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  }

  if (c.provider == "exec") {
    if (c.command.empty())
      throw Error(
          "The exec LLM provider needs a command: set KOPT_LLM_COMMAND to the command line that "
          "reads a request on stdin and prints the reply.");
    return c;  // the model is only passed on; the command may ignore it
  }
  if (c.model.empty())
    throw Error(
        "No LLM model is set: set KOPT_LLM to provider:model (for example "
        "openai:gpt-4.1 or anthropic:claude-sonnet-4-5) or pass --llm.");
  if (c.api_key.empty() && c.provider == "anthropic")
    throw Error(
        "The anthropic provider needs an API key: set ANTHROPIC_API_KEY (or name another "
        "variable with --llm-key-env).");
  // A local server (vLLM, llama.cpp, Ollama) usually wants no key; OpenAI does.
  if (c.api_key.empty() && c.base_url.find("://api.openai.com") != std::string::npos)
    throw Error(
        "The openai provider at api.openai.com needs an API key: set OPENAI_API_KEY (or set "
        "OPENAI_BASE_URL to a local server that needs none).");
  return c;
}

std::unique_ptr<LlmProvider> MakeLlmProvider(const LlmConfig& config) {
  if (config.provider == "openai") return MakeOpenAiProvider(config);
  if (config.provider == "anthropic") return MakeAnthropicProvider(config);
  if (config.provider == "exec") return MakeExecProvider(config);
  throw Error(
      fmt::format("Unknown LLM provider '{}': use openai, anthropic or exec.", config.provider));
}

// --- shared by the providers (providers.h) ---

std::string RedactKey(std::string text, const std::string& key) {
  if (key.empty()) return text;
  static const std::string kMark = "[redacted]";
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + kMark.size()))
    text.replace(at, key.size(), kMark);
  return text;
}

std::string DisplayUrl(const std::string& url) {
  std::string out = url;
  if (auto q = out.find_first_of("?#"); q != std::string::npos) out.erase(q);
  auto scheme = out.find("://");
  size_t host = scheme == std::string::npos ? 0 : scheme + 3;
  auto slash = out.find('/', host);
  auto at = out.rfind('@', slash == std::string::npos ? out.size() : slash);
  if (at != std::string::npos && at >= host) out.erase(host, at + 1 - host);
  return out;
}

std::string Snippet(const std::string& text, size_t max_chars) {
  std::string out;
  bool space = false;
  for (unsigned char ch : text) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    if (ch == '\n' || ch == '\r' || ch == '\t' || ch == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    // Quoted server text goes into JSON (logs, the run store): ASCII only.
    out += (ch < 0x20 || ch >= 0x7f) ? '?' : static_cast<char>(ch);
  }
  while (!out.empty() && out.back() == '.' && out.size() < max_chars) out.pop_back();
  return out;
}

void RedactKey(HttpPostResult* http, const std::string& key) {
  http->body = RedactKey(std::move(http->body), key);
  http->transport_error = RedactKey(std::move(http->transport_error), key);
  for (auto& [name, value] : http->headers) value = RedactKey(std::move(value), key);
}

LlmError HttpFailure(const std::string& provider, const std::string& url,
                     const HttpPostResult& http) {
  LlmError e;
  e.http_status = http.status;
  std::string where = fmt::format("The {} endpoint {}", provider, DisplayUrl(url));
  if (http.timed_out) {
    e.message = where + " did not finish its reply before the timeout.";
    e.retryable = true;
    return e;
  }
  if (http.status >= 200 && http.status < 300) {
    e.message = where + " cut its reply short (" + Snippet(http.transport_error) + ").";
    e.retryable = true;
    return e;
  }
  if (http.status == 0) {
    e.message = fmt::format(
        "Cannot reach the {} endpoint {} ({}): check that the server runs "
        "and the base URL is right.",
        provider, DisplayUrl(url), Snippet(http.transport_error));
    e.retryable = http.transport_retryable;
    return e;
  }
  // The server's own words: {"error": {"message"}} (OpenAI, Anthropic), or
  // {"error": "..."} / {"message": "..."} (some local servers), else the text.
  std::string said;
  try {
    Json j = Json::parse(http.body);
    if (j.is_object() && j.contains("error")) {
      const Json& err = j["error"];
      said = err.is_string() ? err.get<std::string>()
             : err.is_object() && err.contains("message") && err["message"].is_string()
                 ? err["message"].get<std::string>()
                 : err.dump();
    } else if (j.is_object() && j.contains("message") && j["message"].is_string()) {
      said = j["message"];
    }
  } catch (const Json::parse_error&) {
  }
  if (said.empty()) said = http.body;
  std::string hint;
  if (http.status == 401 || http.status == 403)
    hint = ": check the API key";
  else if (http.status == 404)
    hint = ": check the base URL and the model name";
  e.message = fmt::format("{} answered HTTP {}{}{}.", where, http.status,
                          BlankText(said) ? "" : " (" + Snippet(said) + ")", hint);
  e.retryable = http.status == 429 || http.status == 408 || http.status >= 500;
  e.retry_after_s = RetryAfterSeconds(http.headers);
  return e;
}

LlmError MalformedReply(const std::string& provider, const std::string& url,
                        const std::string& body) {
  LlmError e;
  e.message = fmt::format(
      "The {} endpoint {} sent a reply that is neither an event stream nor a chat reply "
      "(it begins \"{}\").",
      provider, DisplayUrl(url), Snippet(body, 60));
  e.retryable = true;
  e.malformed = true;
  return e;
}

LlmError TruncatedReply(const std::string& provider, const std::string& url,
                        const std::string& terminal) {
  LlmError e;
  e.message =
      fmt::format("The {} stream from {} ended before its {} event: the reply was cut short.",
                  provider, DisplayUrl(url), terminal);
  e.retryable = true;
  return e;
}

LlmResult Redacted(LlmResult result, const std::string& key) {
  if (result.error) result.error->message = RedactKey(std::move(result.error->message), key);
  return result;
}

bool LooksLikeJsonBody(const HttpPostResult& http) {
  auto it = http.headers.find("content-type");
  if (it != http.headers.end() && it->second.find("json") != std::string::npos) return true;
  size_t first = http.body.find_first_not_of(" \t\r\n");
  return first != std::string::npos && http.body[first] == '{';
}

bool BlankText(const std::string& text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

Json ParseToolArguments(const std::string& text) {
  if (BlankText(text)) return Json::object();
  try {
    return Json::parse(text);
  } catch (const Json::parse_error&) {
    return Json(text);
  }
}

}  // namespace kopt
