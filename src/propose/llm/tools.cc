#include "propose/llm/tools.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/subprocess.h"
#include "memory/knowledge.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> Words(const std::string& q) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : q) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '.' ||
        c == '/') {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool Searchable(const fs::path& p) {
  static const char* kExt[] = {".h", ".hpp", ".cuh", ".inl", ".cu", ".cpp", ".md", ".py"};
  std::string e = p.extension().string();
  return std::any_of(std::begin(kExt), std::end(kExt), [&](const char* x) { return e == x; });
}

std::string ArgString(const Json& args, const char* key) {
  if (args.is_object() && args.contains(key) && args[key].is_string())
    return args[key].get<std::string>();
  if (args.is_string() && std::string(key) != "path") return args.get<std::string>();
  return "";
}

}  // namespace

CutlassTree::CutlassTree(fs::path include_dir) : root_(fs::weakly_canonical(include_dir)) {}

std::optional<fs::path> CutlassTree::Resolve(const std::string& path) const {
  if (path.empty()) return std::nullopt;
  fs::path rel(path);
  if (rel.is_absolute()) return std::nullopt;
  for (const auto& part : rel)
    if (part == "..") return std::nullopt;
  std::error_code ec;
  fs::path full = fs::weakly_canonical(root_ / rel, ec);
  if (ec) return std::nullopt;
  // A symbolic link inside the tree may still point out of it.
  auto [r, f] = std::mismatch(root_.begin(), root_.end(), full.begin(), full.end());
  if (r != root_.end()) return std::nullopt;
  if (!fs::is_regular_file(full, ec)) return std::nullopt;
  return full;
}

std::string CutlassTree::Search(const std::string& query, int limit) const {
  std::vector<std::string> words = Words(query);
  if (words.empty())
    return "Give search_cutlass some words to look for (e.g. \"make_tiled_copy\").";
  if (files_.empty()) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file() && Searchable(it->path()))
        files_.push_back(fs::relative(it->path(), root_).generic_string());
    std::sort(files_.begin(), files_.end());
  }
  struct Hit {
    std::string file;
    double score = 0;
    std::vector<std::string> lines;
  };
  std::vector<Hit> hits;
  for (const std::string& f : files_) {
    Hit h;
    h.file = f;
    std::string lf = Lower(f);
    for (const auto& w : words)
      if (lf.find(w) != std::string::npos) h.score += 5;
    std::ifstream in(root_ / f);
    std::string line;
    int n = 0, matched = 0;
    while (std::getline(in, line)) {
      ++n;
      std::string ll = Lower(line);
      std::size_t have = 0;
      for (const auto& w : words) have += ll.find(w) != std::string::npos;
      if (have == words.size()) {
        ++matched;
        if (h.lines.size() < 3) {
          std::string t = line.substr(0, 160);
          t.erase(0, t.find_first_not_of(" \t"));
          h.lines.push_back(fmt::format("{}:{}: {}", f, n, t));
        }
      }
    }
    h.score += std::min(matched, 20);
    if (h.score > 0 && (matched > 0 || h.score >= 5 * static_cast<double>(words.size())))
      hits.push_back(std::move(h));
  }
  std::stable_sort(hits.begin(), hits.end(),
                   [](const Hit& a, const Hit& b) { return a.score > b.score; });
  if (hits.empty()) return fmt::format("No file under the CUTLASS tree matches \"{}\".", query);
  std::string out;
  for (int i = 0; i < static_cast<int>(hits.size()) && i < limit; ++i) {
    out += hits[i].file + "\n";
    for (const auto& l : hits[i].lines) out += "  " + l + "\n";
  }
  if (static_cast<int>(hits.size()) > limit)
    out += fmt::format("({} more files match)\n", hits.size() - limit);
  return out;
}

std::string CutlassTree::Read(const std::string& path, long long offset,
                              std::size_t max_chars) const {
  std::optional<fs::path> full = Resolve(path);
  if (!full)
    return fmt::format(
        "\"{}\" is not a file of the CUTLASS tree: give a path relative to its include folder, "
        "as search_cutlass prints it.",
        path);
  std::string text = ReadTextFile(*full);
  std::size_t from = offset > 0 ? std::min<std::size_t>(offset, text.size()) : 0;
  std::size_t n = std::min(max_chars, text.size() - from);
  std::string out = fmt::format("{} (chars {}..{} of {})\n", path, from, from + n, text.size());
  out += text.substr(from, n);
  if (from + n < text.size()) out += fmt::format("\n[more: read_cutlass with offset {}]", from + n);
  return out;
}

std::optional<fs::path> FindCutlassInclude(const fs::path& user, const std::string& python,
                                           std::string* why) {
  auto holds = [](const fs::path& d) {
    return fs::is_directory(d / "cute") || fs::is_directory(d / "cutlass");
  };
  if (!user.empty()) {
    for (const fs::path& d : {user, user / "include", user / "source" / "include"})
      if (holds(d)) return d;
    if (why) *why = "--cutlass " + user.string() + " holds no cute/ or cutlass/ include folder";
    return std::nullopt;
  }
  ProcessOptions o;
  o.timeout_s = 30;
  ProcessResult r =
      RunProcess({python.empty() ? "python3" : python, "-c",
                  "import os, cutlass_library; print(os.path.dirname(cutlass_library.__file__))"},
                 o);
  if (r.ok()) {
    std::string dir = r.out.substr(0, r.out.find('\n'));
    for (const fs::path& d : {fs::path(dir) / "source" / "include", fs::path(dir) / "include"})
      if (holds(d)) return d;
  }
  if (why)
    *why =
        "no CUTLASS tree was found (pip install nvidia-cutlass, or pass --cutlass DIR), so the "
        "model cannot search CuTe's headers";
  return std::nullopt;
}

LlmToolbox::LlmToolbox(const CutlassTree* cutlass, KnowledgeBase* knowledge)
    : cutlass_(cutlass), knowledge_(knowledge) {}

std::vector<LlmTool> LlmToolbox::Tools() const {
  std::vector<LlmTool> t;
  if (cutlass_) {
    t.push_back({"search_cutlass",
                 "Search the local CUTLASS/CuTe headers for words (an API name, a concept). "
                 "Returns matching files with a few matching lines each.",
                 Json{{"type", "object"},
                      {"properties",
                       {{"query", {{"type", "string"}, {"description", "words to look for"}}}}},
                      {"required", {"query"}}}});
    t.push_back(
        {"read_cutlass",
         "Read a CUTLASS/CuTe header, 12000 chars at a time, by its path as "
         "search_cutlass prints it.",
         Json{{"type", "object"},
              {"properties",
               {{"path", {{"type", "string"}, {"description", "e.g. cute/tensor.hpp"}}},
                {"offset", {{"type", "integer"}, {"description", "char offset, default 0"}}}}},
              {"required", {"path"}}}});
  }
  if (knowledge_)
    t.push_back({"search_knowledge",
                 "Search kopt's knowledge base of optimization techniques (curated and learned "
                 "from measured wins).",
                 Json{{"type", "object"},
                      {"properties", {{"query", {{"type", "string"}}}}},
                      {"required", {"query"}}}});
  return t;
}

std::string LlmToolbox::Call(const LlmToolCall& call, std::vector<std::string>* knowledge_ids) {
  std::lock_guard<std::mutex> lock(mu_);
  const Json& a = call.arguments;
  if (call.name == "search_cutlass" && cutlass_) return cutlass_->Search(ArgString(a, "query"));
  if (call.name == "read_cutlass" && cutlass_) {
    long long off = 0;
    if (a.is_object() && a.contains("offset") && a["offset"].is_number_integer())
      off = a["offset"].get<long long>();
    return cutlass_->Read(ArgString(a, "path"), off);
  }
  if (call.name == "search_knowledge" && knowledge_) {
    std::vector<KnowledgeEntry> es = knowledge_->Search(ArgString(a, "query"), 5);
    if (es.empty()) return "No knowledge entry matches.";
    std::string out;
    for (const auto& e : es) {
      if (knowledge_ids) knowledge_ids->push_back(e.id);
      out += fmt::format(
          "[{}] {}\nTechnique: {}\nApplies when: {}\nExpected effect: {}\nPitfalls: {}\n\n", e.id,
          e.title, e.technique, e.applies_when, e.expected_effect, e.pitfalls);
    }
    return out;
  }
  return fmt::format("There is no tool named \"{}\" here.", call.name);
}

ToolLoopResult RunToolLoop(LlmClient& client, LlmRequest request, LlmToolbox* tools,
                           int max_rounds) {
  ToolLoopResult out;
  if (tools) request.tools = tools->Tools();
  for (int round = 0;; ++round) {
    bool last = round >= max_rounds || !tools || request.tools.empty();
    if (last && !request.tools.empty()) {
      request.tools.clear();
      // Tool turns stay in the history; the last answer tells the model to
      // write now (a separate user turn would break Anthropic's alternation).
      if (!request.messages.empty() && request.messages.back().role == "tool")
        request.messages.back().content += "\n\n(No more tool calls: write the candidate now.)";
    }
    LlmResult r = client.Complete(request);
    ++out.rounds;
    if (r.reply) {
      out.usage.input_tokens += r.reply->usage.input_tokens;
      out.usage.output_tokens += r.reply->usage.output_tokens;
      out.usage.cost_usd += r.reply->usage.cost_usd;
      out.cached += r.reply->cached ? 1 : 0;
    }
    if (!r.reply || r.reply->tool_calls.empty() || last) {
      out.result = std::move(r);
      return out;
    }
    LlmMessage asked;
    asked.role = "assistant";
    asked.content = r.reply->text;
    asked.tool_calls = r.reply->tool_calls;
    request.messages.push_back(asked);
    for (const LlmToolCall& c : r.reply->tool_calls) {
      std::vector<std::string> ids;
      std::string answer = tools->Call(c, &ids);
      Json rec{{"name", c.name}, {"arguments", c.arguments}, {"result_chars", answer.size()}};
      if (!ids.empty()) rec["knowledge"] = ids;
      out.calls.push_back(std::move(rec));
      LlmMessage m;
      m.role = "tool";
      m.content = std::move(answer);
      m.tool_call_id = c.id;
      request.messages.push_back(std::move(m));
    }
  }
}

}  // namespace kopt
