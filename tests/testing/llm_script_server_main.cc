// llm_script_server: the loopback LLM test server (llm_server.h) as a
// program, for demos and scripts that drive the real kopt binary against a
// scripted model (bench/llm_demo.sh).
//
//   llm_script_server --script replies.json [--port N] [--port-file F] [--log F]
//                     [--key-env VAR]
//
// It prints "listening on http://127.0.0.1:PORT" (and writes PORT to
// --port-file), serves until SIGTERM or SIGINT, and keeps --log up to date
// with every request: path, headers (keys redacted), body size, model, the
// last user message, which reply it got and when it came. With --key-env, a
// redacted key header says whether it held the key in $VAR, so a log shows
// the key was sent without holding it.
//
// The script is a JSON array of replies, served as llm_server.h says (the
// first whose `match` is in the request's last user message, else the first
// without one; each once):
//
//   {"kind": "openai" | "anthropic", "text": "...",
//    "tool_calls": [{"id": "call_1", "name": "search_knowledge", "arguments": {...}}],
//    "input_tokens": 10, "output_tokens": 20}
//   {"kind": "status", "status": 429, "message": "slow down", "retry_after": 1}
//   {"kind": "garbage"}
//   {"kind": "json", "body": {...}, "status": 200}
//
// and on any of them: "truncated": true (no terminal event), "cut": true (the
// connection dropped mid-body), "delay_s": 6 (wait before answering),
// "match": "# Task 03_swish\n", "label": "a name for the log".
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/json.h"
#include "testing/llm_server.h"

namespace {

using kopt::Json;
using kopt::testing::LlmScriptedReply;
using kopt::testing::LlmTestServer;
using kopt::testing::ScriptedToolCall;

struct Flags {
  std::string script;
  int port = 0;
  std::string port_file;
  std::string log;
  std::string key_env;
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "llm_script_server: %s\nusage: llm_script_server --script FILE.json [--port N] "
               "[--port-file FILE] [--log FILE.json] [--key-env VAR]\n",
               why.c_str());
  std::exit(2);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--script") {
      f.script = value();
    } else if (a == "--port") {
      f.port = std::stoi(value());
    } else if (a == "--port-file") {
      f.port_file = value();
    } else if (a == "--log") {
      f.log = value();
    } else if (a == "--key-env") {
      f.key_env = value();
    } else {
      Usage("unknown argument " + a);
    }
  }
  if (f.script.empty()) Usage("--script is required");
  return f;
}

std::string ReadFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  std::string out;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  std::fclose(f);
  return out;
}

// Written beside the target and renamed, so a reader never sees half a file.
void WriteFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  std::filesystem::rename(tmp, path);
}

LlmScriptedReply ReplyFrom(const Json& j, size_t index) {
  if (!j.is_object())
    throw std::runtime_error("script entry " + std::to_string(index) + " is not an object");
  std::string kind = j.value("kind", std::string("openai"));
  LlmScriptedReply r;
  if (kind == "openai" || kind == "anthropic") {
    std::vector<ScriptedToolCall> calls;
    for (const Json& c : j.value("tool_calls", Json::array()))
      calls.push_back({c.value("id", std::string()), c.value("name", std::string()),
                       c.value("arguments", Json::object())});
    std::string text = j.value("text", std::string());
    long long in = j.value("input_tokens", 10LL), out = j.value("output_tokens", 20LL);
    r = kind == "openai" ? LlmScriptedReply::OpenAi(text, calls, in, out)
                         : LlmScriptedReply::Anthropic(text, calls, in, out);
  } else if (kind == "status") {
    r = LlmScriptedReply::Status(j.value("status", 500), j.value("message", std::string("error")),
                                 j.value("retry_after", -1.0));
  } else if (kind == "garbage") {
    r = LlmScriptedReply::Garbage();
  } else if (kind == "json") {
    r = LlmScriptedReply::JsonBody(j.value("body", Json::object()), j.value("status", 200));
  } else {
    throw std::runtime_error("script entry " + std::to_string(index) + ": unknown kind '" + kind +
                             "' (openai, anthropic, status, garbage, json)");
  }
  if (j.value("truncated", false)) r = r.Truncated();
  if (j.value("cut", false)) r = r.Cut();
  if (double d = j.value("delay_s", 0.0); d > 0) r = r.Delayed(d);
  r.match = j.value("match", std::string());
  r.label = j.value("label", kind + " #" + std::to_string(index));
  return r;
}

bool Secret(const std::string& header) {
  return header == "authorization" || header == "x-api-key" || header == "api-key" ||
         header == "proxy-authorization";
}

// "[REDACTED]", and whether it was the expected key when one is given.
std::string Redacted(const std::string& value, const std::string& key, const std::string& env) {
  if (key.empty()) return "[REDACTED]";
  bool same = value == key || value == "Bearer " + key;
  return std::string(same ? "[REDACTED: the key in $" : "[REDACTED: not the key in $") + env + "]";
}

Json LogJson(const LlmTestServer& server, const Flags& flags) {
  const char* key_value = flags.key_env.empty() ? nullptr : std::getenv(flags.key_env.c_str());
  std::string key = key_value ? key_value : "";
  Json requests = Json::array();
  auto recorded = server.requests();
  for (size_t i = 0; i < recorded.size(); ++i) {
    const auto& r = recorded[i];
    Json headers = Json::object();
    for (const auto& [name, value] : r.headers)
      headers[name] = Secret(name) ? Redacted(value, key, flags.key_env) : value;
    Json model = r.json.is_object() ? r.json.value("model", Json()) : Json();
    requests.push_back(
        {{"index", i},
         {"at_s", r.at_s},
         {"method", r.method},
         {"path", r.path},
         {"headers", headers},
         {"body_bytes", r.body.size()},
         {"model", model},
         {"messages",
          r.json.is_object() && r.json.contains("messages") ? r.json["messages"].size() : 0},
         {"served", r.served},
         {"last_user_message", r.last_user_message}});
  }
  return Json{{"base_url", server.base_url()},
              {"requests", requests},
              {"max_concurrent", server.max_concurrent()},
              {"unserved", server.unserved_labels()}};
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags = ParseFlags(argc, argv);
  // The signals are taken synchronously: blocked before the server's threads
  // start (they inherit the mask), waited for below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  try {
    Json script = Json::parse(ReadFile(flags.script));
    if (!script.is_array())
      throw std::runtime_error(flags.script + " is not a JSON array of replies");
    std::vector<LlmScriptedReply> replies;
    for (size_t i = 0; i < script.size(); ++i) replies.push_back(ReplyFrom(script[i], i));

    LlmTestServer server(flags.port);
    server.Script(std::move(replies));
    std::string url = server.base_url();
    if (!flags.port_file.empty()) WriteFile(flags.port_file, url.substr(url.rfind(':') + 1) + "\n");
    std::printf("listening on %s (%zu scripted replies)\n", url.c_str(), server.unserved());
    std::fflush(stdout);

    size_t logged = static_cast<size_t>(-1);
    auto write_log = [&] {
      if (flags.log.empty()) return;
      WriteFile(flags.log, LogJson(server, flags).dump(2) + "\n");
      logged = server.requests().size();
    };
    write_log();
    timespec tick{0, 200 * 1000 * 1000};
    int sig = -1;
    while ((sig = sigtimedwait(&stop, nullptr, &tick)) < 0) {
      size_t n = server.requests().size();
      if (n != logged) write_log();
    }
    write_log();
    std::printf("stopped by signal %d after %zu request(s); %zu scripted replies not served\n", sig,
                server.requests().size(), server.unserved());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llm_script_server: %s\n", e.what());
    return 1;
  }
  return 0;
}
