// RAII over the SQLite C API for the run store and the knowledge base: a connection with cached
// prepared statements, one use of a statement, and a transaction. SQLite
// errors become kopt::Error sentences that name the file and say what to do.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.h"

namespace kopt::sqlite {

/// How long a writer waits for another writer's transaction to end.
inline constexpr int kBusyTimeoutMs = 10000;

/// One connection (read-write, created when missing, with the busy timeout
/// and extended result codes). Not thread-safe: its owner serializes calls.
class Db {
 public:
  /// Creates the folder and opens the file; throws kopt::Error when either
  /// fails. `noun` names the file in those sentences ("run store",
  /// "knowledge base").
  explicit Db(std::filesystem::path path, std::string noun = "run store");

  sqlite3* get() const { return db_.get(); }
  const std::filesystem::path& path() const { return path_; }

  /// Runs statements that return no rows.
  void Exec(const char* sql, const char* what);
  /// Asks for the write-ahead log and returns the journal mode in effect
  /// ("wal", or the old mode where the file system cannot share memory).
  /// Switching a new file answers SQLITE_BUSY at once, without the busy
  /// handler, when several connections open it together: it is retried for
  /// up to kBusyTimeoutMs.
  std::string UseWriteAheadLog();
  /// The prepared statement for `sql`, prepared once: `sql` must be a string
  /// literal (it is cached by address).
  sqlite3_stmt* Prepared(const char* sql);

  /// Throws kopt::Error for SQLite result `rc`.
  [[noreturn]] void Fail(int rc, const char* what) const;
  /// Throws kopt::Error: the file holds something it should not (`why`).
  [[noreturn]] void Corrupt(const std::string& why) const;

 private:
  struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };

  std::filesystem::path path_;
  std::string noun_;
  std::unique_ptr<sqlite3, Closer> db_;  // before the statements: they are finalized first
  std::map<const char*, std::unique_ptr<sqlite3_stmt, Finalizer>> statements_;
};

/// One use of a cached statement: binds, steps, reads columns; resets it on
/// destruction, so the statement ends (and its read snapshot with it).
class Query {
 public:
  Query(Db& db, const char* sql) : db_(db), stmt_(db.Prepared(sql)) {}
  ~Query();
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  /// Binds the arguments to ?1, ?2, ... in order (text is copied).
  template <class... Args>
  Query& Bind(const Args&... args) {
    int i = 1;
    (BindOne(i++, args), ...);
    return *this;
  }

  /// True when a row is ready; false when done. Throws kopt::Error on errors.
  bool Step();
  /// Runs a statement that returns no rows.
  void Run() {
    while (Step()) {
    }
  }

  bool Null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  long long Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  std::optional<double> OptDouble(int col) const;
  std::optional<int> OptInt(int col) const;
  std::string Text(int col) const;
  /// A JSON text column; a column that does not parse means a corrupt file.
  Json JsonCol(int col) const;
  /// A column holding one of `from_name`'s names; any other means a corrupt file.
  template <class E>
  E Enum(int col, std::optional<E> (*from_name)(std::string_view)) const {
    std::string name = Text(col);
    if (auto e = from_name(name)) return *e;
    db_.Corrupt("unknown value '" + name + "'");
  }

 private:
  void BindOne(int i, const std::string& v);
  void BindOne(int i, const char* v);
  void BindOne(int i, int v);
  void BindOne(int i, long long v);
  void BindOne(int i, double v);
  void BindOne(int i, const std::optional<double>& v);
  void BindOne(int i, const std::optional<int>& v);
  void Check(int rc);

  Db& db_;
  sqlite3_stmt* stmt_;
};

/// BEGIN IMMEDIATE (a write: takes the write lock now, so two writers queue
/// on the busy timeout instead of deadlocking) or BEGIN (a consistent read).
/// Rolls back unless committed.
class Transaction {
 public:
  Transaction(Db& db, bool write);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void Commit();

 private:
  Db& db_;
  bool done_ = false;
};

}  // namespace kopt::sqlite
