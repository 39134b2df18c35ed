// The KnowledgeBase in SQLite: one row per entry, an FTS5 index over its
// words, curated files mirrored in by content hash.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "core/hash.h"
#include "memory/admission.h"
#include "memory/knowledge.h"
#include "memory/retrieval.h"
#include "store/sqlite_db.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;
using sqlite::Db;
using sqlite::Query;
using sqlite::Transaction;

constexpr int kSchemaVersion = 1;
constexpr int kApplicationId = 0x6b6d656d;  // "kmem"

// Lists and provenance are JSON text. `source` is the curated file an entry
// was loaded from ('' for learned and added ones) and `source_hash` its
// content hash, so a changed file is reloaded and a removed one dropped.
constexpr const char* kSchema = R"sql(
CREATE TABLE entries (
  id              TEXT PRIMARY KEY,
  origin          TEXT NOT NULL CHECK (origin IN ('curated', 'learned')),
  title           TEXT NOT NULL,
  op_classes      TEXT NOT NULL,   -- JSON array
  bottlenecks     TEXT NOT NULL,   -- JSON array
  archs           TEXT NOT NULL,   -- JSON array
  technique       TEXT NOT NULL,
  applies_when    TEXT NOT NULL,
  expected_effect TEXT NOT NULL,
  pitfalls        TEXT NOT NULL,
  body            TEXT NOT NULL,
  gain            REAL NOT NULL DEFAULT 0,
  provenance      TEXT NOT NULL DEFAULT '{}',  -- JSON object
  source          TEXT NOT NULL DEFAULT '',
  source_hash     TEXT NOT NULL DEFAULT '',
  updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
-- The words retrieval searches; `tags` holds the structured fields so that
-- "softmax" or "memory" finds entries by class too. Porter stemming lets
-- "conflict" find "conflicts".
CREATE VIRTUAL TABLE entries_fts USING fts5(
  id UNINDEXED, title, technique, applies_when, expected_effect, pitfalls, body, tags,
  tokenize = 'porter unicode61');
)sql";

constexpr const char* kColumns =
    "id, origin, title, op_classes, bottlenecks, archs, technique, applies_when, expected_effect, "
    "pitfalls, body, "
    "gain, provenance";

std::vector<std::string> StringList(const Json& j) {
  std::vector<std::string> out;
  if (j.is_array())
    for (const Json& v : j)
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

KnowledgeEntry Row(const Query& q) {
  KnowledgeEntry e;
  e.id = q.Text(0);
  e.origin = q.Text(1);
  e.title = q.Text(2);
  e.op_classes = StringList(q.JsonCol(3));
  e.bottlenecks = StringList(q.JsonCol(4));
  e.archs = StringList(q.JsonCol(5));
  e.technique = q.Text(6);
  e.applies_when = q.Text(7);
  e.expected_effect = q.Text(8);
  e.pitfalls = q.Text(9);
  e.body = q.Text(10);
  e.gain = q.Double(11);
  e.provenance = q.JsonCol(12);
  return e;
}

std::string Tags(const KnowledgeEntry& e) {
  std::string tags;
  for (const auto* list : {&e.op_classes, &e.bottlenecks, &e.archs})
    for (const std::string& t : *list) tags += t + " ";
  return tags + e.origin;
}

class SqliteKnowledgeBase final : public KnowledgeBase {
 public:
  explicit SqliteKnowledgeBase(const fs::path& path) : db_(path, "knowledge base") {
    UseWriteAheadLog();
    EnsureSchema();
  }

  fs::path path() const override { return db_.path(); }

  void Sync(const fs::path& folder) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
      throw Error(fmt::format(
          "There is no knowledge folder at {}: pass --knowledge DIR, or set KOPT_ROOT to kopt's "
          "repository.",
          folder.string()));
    // Sources are stored absolute, so the same folder named two ways is one.
    const fs::path dir = fs::weakly_canonical(folder, ec);
    std::map<std::string, fs::path> files;
    for (const auto& de : fs::directory_iterator(dir, ec)) {
      const fs::path& p = de.path();
      if (de.is_regular_file() && p.extension() == ".md" && p.filename() != "README.md")
        files[p.stem()] = p;
    }
    if (ec)
      throw Error(fmt::format("Cannot list the knowledge folder {} ({}): check its permissions.",
                              dir.string(), ec.message()));
    // What the database holds from files now, by id: its source and hash.
    std::map<std::string, std::pair<std::string, std::string>> held;
    {
      Query q(db_, "SELECT id, source, source_hash FROM entries WHERE source != ''");
      while (q.Step()) held[q.Text(0)] = {q.Text(1), q.Text(2)};
    }
    std::vector<std::pair<KnowledgeEntry, std::pair<std::string, std::string>>> changed;
    for (const auto& [id, p] : files) {
      std::string text = ReadTextFile(p);
      std::string hash = ContentHash({text});
      auto it = held.find(id);
      if (it != held.end() && it->second.first == p.string() && it->second.second == hash) continue;
      KnowledgeEntry e;
      try {
        e = ParseKnowledgeMarkdown(id, text);
      } catch (const Error& err) {
        throw Error(fmt::format("{} (in {})", err.what(), p.string()));
      }
      if (e.origin != "curated")
        throw Error(fmt::format(
            "{} says origin: {}; files in the knowledge folder are curated: remove that line.",
            p.string(), e.origin));
      changed.push_back({std::move(e), {p.string(), hash}});
    }
    std::vector<std::string> gone;
    for (const auto& [id, src] : held)
      if (fs::path(src.first).parent_path() == dir && !files.count(id)) gone.push_back(id);
    if (changed.empty() && gone.empty()) return;
    Transaction t(db_, true);
    for (const auto& [e, src] : changed) Write(e, src.first, src.second);
    for (const std::string& id : gone) Delete(id);
    t.Commit();
  }

  std::vector<KnowledgeEntry> Retrieve(const KnowledgeQuery& query) override {
    struct Ranked {
      KnowledgeEntry e;
      StructuralMatch match;
      double rank;  // bm25: lower is better; +inf when the text does not match
    };
    std::map<std::string, double> text_rank = TextRanks(query.text, -1);
    std::vector<Ranked> ranked;
    for (KnowledgeEntry& e : All()) {
      StructuralMatch match = MatchStructure(e, query);
      if (match.excluded) continue;
      auto it = text_rank.find(e.id);
      double rank = it == text_rank.end() ? std::numeric_limits<double>::infinity() : it->second;
      ranked.push_back({std::move(e), match, rank});
    }
    std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      if (a.match.relevance != b.match.relevance) return a.match.relevance > b.match.relevance;
      if (a.rank != b.rank) return a.rank < b.rank;
      if (a.match.arch_specific != b.match.arch_specific) return a.match.arch_specific;
      if (a.e.gain != b.e.gain) return a.e.gain > b.e.gain;
      return a.e.id < b.e.id;
    });
    std::vector<KnowledgeEntry> out;
    for (std::size_t i = 0;
         i < ranked.size() && (query.limit <= 0 || static_cast<int>(i) < query.limit); ++i)
      out.push_back(std::move(ranked[i].e));
    return out;
  }

  std::optional<KnowledgeEntry> Get(const std::string& id) override {
    Query q(db_,
            "SELECT id, origin, title, op_classes, bottlenecks, archs, technique, applies_when, "
            "expected_effect, "
            "pitfalls, body, gain, provenance FROM entries WHERE id = ?1");
    q.Bind(id);
    if (!q.Step()) return std::nullopt;
    return Row(q);
  }

  std::vector<KnowledgeEntry> List() override { return All(); }

  std::vector<KnowledgeEntry> Search(const std::string& text, int limit) override {
    std::map<std::string, double> ranks = TextRanks(text, limit);
    std::vector<std::pair<double, KnowledgeEntry>> found;
    for (const auto& [id, rank] : ranks)
      if (auto e = Get(id)) found.push_back({rank, std::move(*e)});
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      return a.second.id < b.second.id;
    });
    std::vector<KnowledgeEntry> out;
    for (auto& [_, e] : found) out.push_back(std::move(e));
    return out;
  }

  Admission Admit(const LearnedWin& win) override {
    Admission a;
    std::string why = WhyNotAdmitted(win);
    if (!why.empty()) {
      a.reason = why;
      return a;
    }
    KnowledgeEntry e = LearnedEntry(win);
    a.id = e.id;
    Transaction t(db_, true);
    std::optional<KnowledgeEntry> old = Get(e.id);
    if (old && old->gain >= e.gain) {
      a.reason = fmt::format("already learned as {} with a gain of {:.3f}x (this one: {:.3f}x)",
                             e.id, old->gain, e.gain);
      return a;
    }
    Write(e, "", "");
    t.Commit();
    a.admitted = true;
    a.reason = old ? fmt::format("admitted as {} ({:.3f}x, better than the {:.3f}x it had)", e.id,
                                 e.gain, old->gain)
                   : fmt::format("admitted as {} ({:.3f}x)", e.id, e.gain);
    return a;
  }

  void Put(const KnowledgeEntry& entry) override {
    if (!ValidKnowledgeId(entry.id))
      throw Error(fmt::format(
          "'{}' is not a knowledge entry id: use lowercase letters, digits, '-' and '_' (the "
          "file's name without .md).",
          entry.id));
    // The same checks as a curated file's (the Markdown writer and parser agree).
    ParseKnowledgeMarkdown(entry.id, KnowledgeToMarkdown(entry));
    Transaction t(db_, true);
    Write(entry, "", "");
    t.Commit();
  }

 private:
  // WAL, so readers never block a writer (sqlite::Db waits out the moment
  // a new file is switched). A file system without WAL support keeps its
  // rollback journal, which serves the knowledge base too.
  void UseWriteAheadLog() {
    db_.UseWriteAheadLog();
    db_.Exec("PRAGMA synchronous = NORMAL", "set the synchronous mode");
  }

  long long SchemaVersion() {
    Query q(db_, "PRAGMA user_version");
    return q.Step() ? q.Int(0) : 0;
  }

  void EnsureSchema() {
    if (SchemaVersion() == kSchemaVersion) return;
    // Another kopt may be creating the file at this moment: decide under the
    // write lock, so the second one finds the schema instead of racing it.
    Transaction t(db_, true);
    long long version = SchemaVersion();
    if (version == kSchemaVersion) return;
    if (version > kSchemaVersion)
      throw Error(fmt::format(
          "The knowledge base {} was written by a newer kopt (schema {}, this kopt reads {}): "
          "update kopt or set KOPT_MEMORY to another file.",
          db_.path().string(), version, kSchemaVersion));
    bool empty = true;
    {
      Query q(db_, "SELECT count(*) FROM sqlite_master");
      if (q.Step()) empty = q.Int(0) == 0;
    }
    if (!empty)
      throw Error(fmt::format(
          "{} holds another database, not a kopt knowledge base: set KOPT_MEMORY (or --db) to "
          "another file.",
          db_.path().string()));
    db_.Exec(kSchema, "create the schema");
    db_.Exec(fmt::format("PRAGMA user_version = {}; PRAGMA application_id = {};", kSchemaVersion,
                         kApplicationId)
                 .c_str(),
             "set the schema version");
    t.Commit();
  }

  std::vector<KnowledgeEntry> All() {
    Query q(db_,
            "SELECT id, origin, title, op_classes, bottlenecks, archs, technique, applies_when, "
            "expected_effect, "
            "pitfalls, body, gain, provenance FROM entries ORDER BY id");
    std::vector<KnowledgeEntry> out;
    while (q.Step()) out.push_back(Row(q));
    return out;
  }

  // id -> bm25 rank (lower is better) of the entries matching `text`'s
  // words; the title and technique weigh most. Empty for no words.
  std::map<std::string, double> TextRanks(const std::string& text, int limit) {
    std::map<std::string, double> ranks;
    std::string match = FtsMatchExpression(text);
    if (match.empty()) return ranks;
    Query q(
        db_,
        "SELECT id, bm25(entries_fts, 0, 4.0, 3.0, 2.0, 1.5, 1.0, 1.0, 2.0) AS r FROM entries_fts "
        "WHERE entries_fts MATCH ?1 ORDER BY r, id LIMIT ?2");
    q.Bind(match, limit > 0 ? limit : -1);
    while (q.Step()) ranks[q.Text(0)] = q.Double(1);
    return ranks;
  }

  void Write(const KnowledgeEntry& e, const std::string& source, const std::string& source_hash) {
    Query q(
        db_,
        "INSERT INTO entries (id, origin, title, op_classes, bottlenecks, archs, technique, "
        "applies_when, "
        "expected_effect, pitfalls, body, gain, provenance, source, source_hash) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) "
        "ON CONFLICT (id) DO UPDATE SET origin = excluded.origin, title = excluded.title, "
        "op_classes = excluded.op_classes, bottlenecks = excluded.bottlenecks, archs = "
        "excluded.archs, "
        "technique = excluded.technique, applies_when = excluded.applies_when, "
        "expected_effect = excluded.expected_effect, pitfalls = excluded.pitfalls, body = "
        "excluded.body, "
        "gain = excluded.gain, provenance = excluded.provenance, source = excluded.source, "
        "source_hash = excluded.source_hash, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')");
    q.Bind(e.id, e.origin, e.title, Json(e.op_classes).dump(), Json(e.bottlenecks).dump(),
           Json(e.archs).dump(), e.technique, e.applies_when, e.expected_effect, e.pitfalls, e.body,
           e.gain, (e.provenance.is_object() ? e.provenance : Json::object()).dump(), source,
           source_hash);
    q.Run();
    Query del(db_, "DELETE FROM entries_fts WHERE id = ?1");
    del.Bind(e.id).Run();
    Query fts(db_,
              "INSERT INTO entries_fts (id, title, technique, applies_when, expected_effect, "
              "pitfalls, body, tags) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    fts.Bind(e.id, e.title, e.technique, e.applies_when, e.expected_effect, e.pitfalls, e.body,
             Tags(e))
        .Run();
  }

  void Delete(const std::string& id) {
    Query q(db_, "DELETE FROM entries WHERE id = ?1");
    q.Bind(id).Run();
    Query fts(db_, "DELETE FROM entries_fts WHERE id = ?1");
    fts.Bind(id).Run();
  }

  Db db_;
};

}  // namespace

std::unique_ptr<KnowledgeBase> OpenKnowledgeBase(const fs::path& db, const fs::path& curated_dir) {
  auto kb = std::make_unique<SqliteKnowledgeBase>(db);
  if (!curated_dir.empty()) kb->Sync(curated_dir);
  return kb;
}

}  // namespace kopt
