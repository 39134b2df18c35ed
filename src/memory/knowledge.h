// Long-term memory: what kopt knows about making kernels fast. Curated
// entries (knowledge/*.md, written by people) and entries learned from runs
// (admitted only from verified, measured wins), in SQLite with FTS5.
// Retrieval matches structure first (op class, bottleneck class,
// architecture), then text. The expert and the LLM proposers both read it.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace kopt {

/// One piece of knowledge: a technique and when it pays.
struct KnowledgeEntry {
  std::string id;     ///< stable: the file's stem for curated, "learned-<hash>" for learned
  std::string title;  ///< one line
  std::string origin = "curated";  ///< "curated" (written by a person) or "learned"
  /// kopt's op classes (knowledge/vocabulary.json): "elementwise", "reduce",
  /// "gemm", ...; empty: any.
  std::vector<std::string> op_classes;
  /// Roofline classes (diagnose/roofline.h's names, "memory.dram", ...) or
  /// their families ("memory", "compute"); empty: any.
  std::vector<std::string> bottlenecks;
  std::vector<std::string> archs;  ///< "sm_90", ...; empty: any
  std::string technique;           ///< what to do, in words
  std::string applies_when;        ///< when it applies
  std::string expected_effect;     ///< what it should change, with numbers where known
  std::string pitfalls;            ///< what goes wrong
  std::string body;                ///< the rest of the Markdown (examples, code sketches)
  /// Learned entries: the measured gain (speedup of the child over its
  /// parent) and where it came from ({"run", "node", "task", "gpu", "move",
  /// "proposer", "diagnosis", "parent_ms", "child_ms"}).
  double gain = 0;
  Json provenance = Json::object();
};

/// Curated entries must fill these (ParseKnowledgeMarkdown refuses one that
/// does not): the proposers quote them.
inline constexpr const char* kRequiredKnowledgeFields[] = {"title", "technique", "applies_when",
                                                           "expected_effect", "pitfalls"};

/// What a proposer asks for.
struct KnowledgeQuery {
  std::string op_class;  ///< "" matches any
  std::string
      bottleneck;    ///< a roofline class ("memory.dram") or family ("memory"); "" matches any
  std::string arch;  ///< "" matches any
  std::string text;  ///< free text for FTS5 (diagnosis names, op names); may be empty
  int limit = 5;
};

/// A measured result offered to memory after a run; Admit decides.
struct LearnedWin {
  std::string task;        ///< task name
  std::string op_class;    ///< the task's op class
  std::string bottleneck;  ///< the parent's roofline class, if profiled
  std::string arch;
  std::string move;  ///< the move, in words
  std::string proposer;
  std::string diagnosis;             ///< the diagnosis that led to the move, if any
  bool verified = false;             ///< passed the full verifier
  bool measured = false;             ///< has a timing
  double parent_ms = 0;              ///< the parent's (or reference's) median
  double child_ms = 0;               ///< the candidate's median
  Json provenance = Json::object();  ///< {"run","node","gpu"}
};

/// Why a LearnedWin was or was not admitted.
struct Admission {
  bool admitted = false;
  std::string
      reason;  ///< "admitted as learned-…", "not verified", "not faster than its parent (0.98x)"
  std::string id;
};

class KnowledgeBase {
 public:
  virtual ~KnowledgeBase() = default;
  /// Best first: entries whose structured fields match the query (an empty
  /// list in an entry matches anything), ranked by how specifically their op
  /// class and bottleneck match (op class weighs most), then by FTS5 rank of
  /// `text` (entries that match the text before those that do not), then
  /// those listing the query's arch, then by gain (learned); memory/retrieval.h.
  virtual std::vector<KnowledgeEntry> Retrieve(const KnowledgeQuery& query) = 0;
  virtual std::optional<KnowledgeEntry> Get(const std::string& id) = 0;
  virtual std::vector<KnowledgeEntry> List() = 0;
  /// Full-text search only (kopt memory search).
  virtual std::vector<KnowledgeEntry> Search(const std::string& text, int limit) = 0;
  /// Admits only verified, measured wins (child faster than parent by a
  /// margin beyond timing noise); never an unverified or slower result.
  virtual Admission Admit(const LearnedWin& win) = 0;
  /// Adds or replaces an entry written by a person (kopt memory add); throws
  /// kopt::Error when its id is not a valid stem or a required field is empty.
  virtual void Put(const KnowledgeEntry& entry) = 0;
  /// Where it lives (for messages).
  virtual std::filesystem::path path() const = 0;
};

/// Opens (creating if needed) the knowledge database at `db` and loads the
/// curated entries of `curated_dir` (knowledge/*.md but README.md) into it:
/// a curated entry whose file changed is reloaded, one whose file is gone is
/// dropped; an empty `curated_dir` loads nothing. Throws kopt::Error, one sentence, when
/// the database cannot be opened or an entry cannot be parsed.
std::unique_ptr<KnowledgeBase> OpenKnowledgeBase(const std::filesystem::path& db,
                                                 const std::filesystem::path& curated_dir);

/// Parses one curated entry: Markdown with YAML-like front matter (the
/// format is knowledge/README.md's). Throws kopt::Error, one sentence naming
/// the line, when it does not parse or a required field is missing.
KnowledgeEntry ParseKnowledgeMarkdown(const std::string& id, const std::string& text);
/// Writes an entry back as Markdown with front matter (kopt memory export).
std::string KnowledgeToMarkdown(const KnowledgeEntry& entry);

/// True for a valid entry id: lowercase letters, digits, '-' and '_',
/// starting with a letter or digit (ids are file stems).
bool ValidKnowledgeId(const std::string& id);

Json ToJson(const KnowledgeEntry& e);

}  // namespace kopt
