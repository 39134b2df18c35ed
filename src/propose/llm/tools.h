// Tools the model may call before it writes code: search and read a local
// CUTLASS/CuTe tree (so CuTe code uses APIs that exist) and search kopt's
// knowledge base; and the loop that runs tool calls until the model answers.
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "propose/llm/client.h"
#include "propose/llm/provider.h"

namespace kopt {

class KnowledgeBase;

/// A CUTLASS include tree (the folder holding cute/ and cutlass/), searched
/// and read with every path confined to it.
class CutlassTree {
 public:
  explicit CutlassTree(std::filesystem::path include_dir);
  const std::filesystem::path& root() const { return root_; }
  /// Files whose path or lines match the words of `query`, best first:
  /// "path:line: text" lines, at most `limit` files.
  std::string Search(const std::string& query, int limit = 12) const;
  /// Up to `max_chars` of the file at `path` (relative to the root) from
  /// char `offset`; a path outside the root (absolute, "..") is refused.
  std::string Read(const std::string& path, long long offset, std::size_t max_chars = 12000) const;
  /// The file the relative `path` names, or nullopt when it leaves the root
  /// or does not exist.
  std::optional<std::filesystem::path> Resolve(const std::string& path) const;

 private:
  std::filesystem::path root_;
  mutable std::vector<std::string> files_;  ///< relative paths, listed on first use
};

/// The include folder of a CUTLASS tree: `user` (the tree or its include/)
/// when given, else the installed nvidia-cutlass package's, asked of
/// `python` (cutlass_library/source/include). nullopt with `*why` when none.
std::optional<std::filesystem::path> FindCutlassInclude(const std::filesystem::path& user,
                                                        const std::string& python,
                                                        std::string* why);

/// search_cutlass, read_cutlass, search_knowledge: the tools offered to the
/// model, and their answers (text; a bad call is answered in words).
class LlmToolbox {
 public:
  /// Either may be null: its tools are then not offered.
  LlmToolbox(const CutlassTree* cutlass, KnowledgeBase* knowledge);
  std::vector<LlmTool> Tools() const;
  /// Safe to call from several requests' threads (calls run one at a time).
  /// `knowledge_ids`, when given, gets the ids of the entries a knowledge
  /// search returned.
  std::string Call(const LlmToolCall& call, std::vector<std::string>* knowledge_ids = nullptr);

 private:
  const CutlassTree* cutlass_;
  KnowledgeBase* knowledge_;
  std::mutex mu_;
};

struct ToolLoopResult {
  LlmResult result;            ///< the final reply (no more tool calls), or the error
  int rounds = 0;              ///< requests sent
  Json calls = Json::array();  ///< {name, arguments, result_chars[, knowledge: ids]}
  LlmUsage usage;              ///< summed over the rounds
  int cached = 0;              ///< rounds answered from the cache
};

/// Sends `request`; while the reply calls tools (at most `max_rounds`
/// rounds of them), answers them and asks again. The last round offers no
/// tools, so the model must answer in text.
ToolLoopResult RunToolLoop(LlmClient& client, LlmRequest request, LlmToolbox* tools,
                           int max_rounds);

}  // namespace kopt
