#include "store/sqlite_db.h"

#include <chrono>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"

namespace kopt::sqlite {

namespace fs = std::filesystem;

Db::Db(fs::path path, std::string noun) : path_(std::move(path)), noun_(std::move(noun)) {
  std::error_code ec;
  if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), ec);
  if (ec)
    throw Error(
        fmt::format("Cannot create the folder {} for the {} ({}): "
                    "check its permissions or put the file somewhere else.",
                    path_.parent_path().string(), noun_, ec.message()));
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path_.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  db_.reset(raw);  // even a failed open returns a handle to close
  if (rc != SQLITE_OK) Fail(rc, "open");
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
}

std::string Db::UseWriteAheadLog() {
  constexpr int kRetryMs = 5;
  for (int waited_ms = 0;; waited_ms += kRetryMs) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db_.get(), "PRAGMA journal_mode=WAL", -1, &raw, nullptr);
    std::unique_ptr<sqlite3_stmt, Finalizer> stmt(raw);
    if (rc == SQLITE_OK) rc = sqlite3_step(raw);
    if (rc == SQLITE_ROW) {
      const unsigned char* mode = sqlite3_column_text(raw, 0);
      return mode ? reinterpret_cast<const char*>(mode) : "";
    }
    if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= kBusyTimeoutMs) Fail(rc, "set the journal mode");
    stmt.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(kRetryMs));
  }
}

void Db::Exec(const char* sql, const char* what) {
  int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) Fail(rc, what);
}

sqlite3_stmt* Db::Prepared(const char* sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second.get();
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt(raw);
  if (rc != SQLITE_OK) Fail(rc, "prepare");
  return statements_.emplace(sql, std::move(stmt)).first->second.get();
}

void Db::Fail(int rc, const char* what) const {
  std::string file = path_.string();
  std::string msg = db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      throw Error(
          fmt::format("{} is not a kopt {} (not an SQLite database): "
                      "move it aside or point kopt at another file.",
                      file, noun_));
    case SQLITE_CORRUPT:
      Corrupt(msg);
    case SQLITE_FULL:
      throw Error(
          fmt::format("The disk holding the {} {} is full: "
                      "free some space, then try again.",
                      noun_, file));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw Error(
          fmt::format("The {} {} stayed locked by another kopt for {} s: "
                      "wait for it to finish, or stop it, and try again.",
                      noun_, file, kBusyTimeoutMs / 1000));
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
    case SQLITE_AUTH:
      throw Error(
          fmt::format("Cannot open or write the {} {} ({}): "
                      "check the permissions of the file and its folder, or put the store "
                      "somewhere else.",
                      noun_, file, msg));
    case SQLITE_IOERR:
      throw Error(
          fmt::format("Reading or writing the {} {} failed ({}): "
                      "check the disk, then try again.",
                      noun_, file, msg));
    default:
      throw Error(
          fmt::format("The {} {} failed in {} ({}): "
                      "this is a bug in kopt, please report it with the command you ran.",
                      noun_, file, what, msg));
  }
}

void Db::Corrupt(const std::string& why) const {
  throw Error(
      fmt::format("The {} {} is corrupt ({}): "
                  "move it aside (kopt starts a new one) or restore a backup.",
                  noun_, path_.string(), why));
}

Query::~Query() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Query::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.Fail(rc, sqlite3_sql(stmt_));
}

std::optional<double> Query::OptDouble(int col) const {
  if (Null(col)) return std::nullopt;
  return Double(col);
}

std::optional<int> Query::OptInt(int col) const {
  if (Null(col)) return std::nullopt;
  return static_cast<int>(Int(col));
}

std::string Query::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  return p ? std::string(p, sqlite3_column_bytes(stmt_, col)) : std::string();
}

Json Query::JsonCol(int col) const {
  try {
    return Json::parse(Text(col));
  } catch (const Json::exception& e) {
    db_.Corrupt(std::string("a JSON column does not parse: ") + e.what());
  }
}

void Query::BindOne(int i, const std::string& v) {
  Check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
}
void Query::BindOne(int i, const char* v) {
  Check(sqlite3_bind_text(stmt_, i, v, -1, SQLITE_TRANSIENT));
}
void Query::BindOne(int i, int v) { Check(sqlite3_bind_int64(stmt_, i, v)); }
void Query::BindOne(int i, long long v) { Check(sqlite3_bind_int64(stmt_, i, v)); }
void Query::BindOne(int i, double v) { Check(sqlite3_bind_double(stmt_, i, v)); }
void Query::BindOne(int i, const std::optional<double>& v) {
  Check(v ? sqlite3_bind_double(stmt_, i, *v) : sqlite3_bind_null(stmt_, i));
}
void Query::BindOne(int i, const std::optional<int>& v) {
  Check(v ? sqlite3_bind_int64(stmt_, i, *v) : sqlite3_bind_null(stmt_, i));
}
void Query::Check(int rc) {
  if (rc != SQLITE_OK) db_.Fail(rc, "bind");
}

Transaction::Transaction(Db& db, bool write) : db_(db) {
  db_.Exec(write ? "BEGIN IMMEDIATE" : "BEGIN", "begin");
}

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::Commit() {
  db_.Exec("COMMIT", "commit");
  done_ = true;
}

}  // namespace kopt::sqlite
