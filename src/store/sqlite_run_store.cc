// The SQLite RunStore: one file, WAL journal, one connection per store.
//
// Durability: WAL with synchronous=NORMAL survives a killed process (kill -9)
// with every committed transaction intact; only a power loss or OS crash may
// lose the last few commits (never corrupt the file). Every write is one
// transaction (sqlite_db.h); readers in other processes never block the
// writer, and the writer never blocks them.
#include <mutex>

#include <fmt/format.h>

#include "core/error.h"
#include "store/run_store.h"
#include "store/sqlite_db.h"
#include "store/store_rules.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;
namespace rules = store_rules;
using sqlite::Db;
using sqlite::Query;
using sqlite::Transaction;

constexpr int kSchemaVersion = 2;
constexpr int kApplicationId = 0x6b6f7074;  // "kopt"

// Version 2 (version 1 lacked tasks.finalists). Rich payloads are JSON text;
// what is queried or sorted is typed.
// A change to the schema bumps kSchemaVersion and adds a migration from the
// previous version in EnsureSchema (an older kopt refuses the newer file).
constexpr const char* kSchema = R"sql(
CREATE TABLE runs (
  id                 TEXT PRIMARY KEY,       -- 20261203-0812-3fa2
  created_at         TEXT NOT NULL,          -- UTC ISO-8601, 2026-12-03T08:12:05.123Z
  updated_at         TEXT NOT NULL,
  status             TEXT NOT NULL
                     CHECK (status IN ('running', 'finished', 'budget_spent', 'interrupted', 'failed')),
  kopt_version       TEXT NOT NULL,
  options            TEXT NOT NULL,          -- JSON: proposer, search, objective, seed, budget, command line
  device             TEXT NOT NULL,          -- JSON
  spent_wall_s       REAL NOT NULL DEFAULT 0,  -- BudgetSpent, written with each outcome
  spent_gpu_s        REAL NOT NULL DEFAULT 0,
  spent_candidates   INTEGER NOT NULL DEFAULT 0,
  spent_llm_tokens   INTEGER NOT NULL DEFAULT 0,
  spent_llm_cost_usd REAL NOT NULL DEFAULT 0,
  note               TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_created ON runs (created_at);

CREATE TABLE tasks (
  run_id     TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  task_index INTEGER NOT NULL,
  name       TEXT NOT NULL,
  path       TEXT NOT NULL,
  task_hash  TEXT NOT NULL,
  bundle     TEXT NOT NULL,                  -- JSON: TaskBundle
  contract   TEXT NOT NULL,                  -- JSON: Contract
  status     TEXT NOT NULL
             CHECK (status IN ('pending', 'running', 'finished', 'budget_spent', 'failed')),
  best_node  INTEGER,
  finalists  TEXT NOT NULL DEFAULT '[]',     -- JSON: the finalists re-timed together at the end
  PRIMARY KEY (run_id, task_index)
);

CREATE TABLE nodes (
  run_id      TEXT NOT NULL,
  task_index  INTEGER NOT NULL,
  node_id     INTEGER NOT NULL,
  parent_id   INTEGER,                       -- NULL for the root
  depth       INTEGER NOT NULL,
  move        TEXT NOT NULL,
  proposer    TEXT NOT NULL,
  expected    TEXT NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('cuda', 'hybrid', 'reference')),
  name        TEXT NOT NULL,
  source      TEXT NOT NULL,
  source_hash TEXT NOT NULL,
  detail      TEXT NOT NULL,                 -- JSON: the proposer's own record
  created_at  TEXT NOT NULL,
  PRIMARY KEY (run_id, task_index, node_id),
  UNIQUE (run_id, task_index, source_hash),
  FOREIGN KEY (run_id, task_index) REFERENCES tasks (run_id, task_index) ON DELETE CASCADE,
  FOREIGN KEY (run_id, task_index, parent_id) REFERENCES nodes (run_id, task_index, node_id)
);
CREATE INDEX nodes_by_parent ON nodes (run_id, task_index, parent_id);

CREATE TABLE outcomes (
  run_id      TEXT NOT NULL,
  task_index  INTEGER NOT NULL,
  node_id     INTEGER NOT NULL,
  verdict     TEXT NOT NULL
              CHECK (verdict IN ('build_failed', 'incorrect', 'crashed', 'timed_out', 'measured')),
  outcome     TEXT NOT NULL,                 -- JSON: ToJson(Outcome)
  evaluation  TEXT NOT NULL,                 -- JSON: the full evaluation record, every sample
  objective   REAL,                          -- lower is better
  time_ms     REAL,
  energy_mj   REAL,
  speedup     REAL,                          -- vs eager PyTorch
  gpu_s       REAL NOT NULL,
  finished_at TEXT NOT NULL,
  PRIMARY KEY (run_id, task_index, node_id),
  FOREIGN KEY (run_id, task_index, node_id) REFERENCES nodes (run_id, task_index, node_id)
    ON DELETE CASCADE
);

CREATE TABLE profiles (
  run_id     TEXT NOT NULL,
  task_index INTEGER NOT NULL,
  node_id    INTEGER NOT NULL,
  profile    TEXT NOT NULL,                  -- JSON
  diagnoses  TEXT NOT NULL,                  -- JSON array
  created_at TEXT NOT NULL,
  PRIMARY KEY (run_id, task_index, node_id),
  FOREIGN KEY (run_id, task_index, node_id) REFERENCES nodes (run_id, task_index, node_id)
    ON DELETE CASCADE
);
)sql";

// The statements, each a literal so Db::Prepared caches it by address.
#define KOPT_RUN_SELECT                                                                      \
  "SELECT id, created_at, updated_at, status, kopt_version, options, device, "               \
  "spent_wall_s, spent_gpu_s, spent_candidates, spent_llm_tokens, spent_llm_cost_usd, note " \
  "FROM runs "
#define KOPT_TASK_SELECT                                                                    \
  "SELECT run_id, task_index, name, path, task_hash, bundle, contract, status, best_node, " \
  "finalists "                                                                              \
  "FROM tasks "
#define KOPT_NODE_SELECT                                                                 \
  "SELECT n.run_id, n.task_index, n.node_id, n.parent_id, n.depth, n.move, n.proposer, " \
  "n.expected, n.kind, n.name, n.source, n.source_hash, n.detail, n.created_at "         \
  "FROM nodes n "
#define KOPT_OUTCOME_SELECT                                                                \
  "SELECT run_id, task_index, node_id, verdict, outcome, evaluation, objective, time_ms, " \
  "energy_mj, speedup, gpu_s, finished_at "                                                \
  "FROM outcomes "
#define KOPT_PROFILE_SELECT \
  "SELECT run_id, task_index, node_id, profile, diagnoses, created_at FROM profiles "

RunRecord ReadRun(const Query& q) {
  RunRecord r;
  r.id = q.Text(0);
  r.created_at = q.Text(1);
  r.updated_at = q.Text(2);
  r.status = q.Enum(3, RunStatusFromName);
  r.kopt_version = q.Text(4);
  r.options = q.JsonCol(5);
  r.device = q.JsonCol(6);
  r.spent.wall_s = q.Double(7);
  r.spent.gpu_s = q.Double(8);
  r.spent.candidates = q.Int(9);
  r.spent.llm_tokens = q.Int(10);
  r.spent.llm_cost_usd = q.Double(11);
  r.note = q.Text(12);
  return r;
}

TaskRecord ReadTask(const Query& q) {
  TaskRecord t;
  t.run_id = q.Text(0);
  t.index = static_cast<int>(q.Int(1));
  t.name = q.Text(2);
  t.path = q.Text(3);
  t.task_hash = q.Text(4);
  t.bundle = rules::BundleFromStored(q.JsonCol(5));
  t.contract = rules::ContractFromStored(q.JsonCol(6));
  t.status = q.Enum(7, TaskStatusFromName);
  t.best_node = q.OptInt(8);
  t.finalists = q.JsonCol(9);
  if (!t.finalists.is_array()) t.finalists = Json::array();
  return t;
}

NodeRecord ReadNode(const Query& q) {
  NodeRecord n;
  n.run_id = q.Text(0);
  n.task_index = static_cast<int>(q.Int(1));
  n.id = static_cast<int>(q.Int(2));
  n.parent = q.OptInt(3);
  n.depth = static_cast<int>(q.Int(4));
  n.move = q.Text(5);
  n.proposer = q.Text(6);
  n.expected = q.Text(7);
  n.kind = q.Enum(8, NodeKindFromName);
  n.name = q.Text(9);
  n.source = q.Text(10);
  n.source_hash = q.Text(11);
  n.detail = q.JsonCol(12);
  n.created_at = q.Text(13);
  return n;
}

OutcomeRecord ReadOutcome(const Query& q) {
  OutcomeRecord o;
  o.run_id = q.Text(0);
  o.task_index = static_cast<int>(q.Int(1));
  o.node = static_cast<int>(q.Int(2));
  o.verdict = q.Text(3);
  o.outcome = q.JsonCol(4);
  o.evaluation = q.JsonCol(5);
  o.objective = q.OptDouble(6);
  o.time_ms = q.OptDouble(7);
  o.energy_mj = q.OptDouble(8);
  o.speedup = q.OptDouble(9);
  o.gpu_s = q.Double(10);
  o.finished_at = q.Text(11);
  return o;
}

ProfileRecord ReadProfile(const Query& q) {
  ProfileRecord p;
  p.run_id = q.Text(0);
  p.task_index = static_cast<int>(q.Int(1));
  p.node = static_cast<int>(q.Int(2));
  p.profile = q.JsonCol(3);
  p.diagnoses = DiagnosesFromJson(q.JsonCol(4));
  p.created_at = q.Text(5);
  return p;
}

class SqliteRunStore : public RunStore {
 public:
  SqliteRunStore(const fs::path& path, WallClock now)
      : now_(rules::ClockOr(std::move(now))), rng_(rules::SeededRng()), db_(path) {
    // The first statements read the file's header: a file that is not a
    // database fails here, with SQLITE_NOTADB.
    {
      std::string mode = db_.UseWriteAheadLog();
      if (mode != "wal")
        throw Error(fmt::format(
            "The run store {} cannot use SQLite's write-ahead log (journal mode '{}'; a "
            "network file system?): put it on a local disk.",
            path.string(), mode));
    }
    db_.Exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", "pragmas");
    EnsureSchema();
  }

  RunRecord CreateRun(const NewRun& run) override {
    std::lock_guard lock(mu_);
    Transaction tx(db_, true);
    auto t = now_();
    RunRecord r;
    for (int attempt = 0; attempt < rules::kRunIdAttempts && r.id.empty(); ++attempt) {
      std::string id = rules::NewRunId(t, rng_);
      Query q(db_, "SELECT 1 FROM runs WHERE id = ?1");
      if (!q.Bind(id).Step()) r.id = id;
    }
    if (r.id.empty()) rules::ThrowNoFreeRunId();
    r.created_at = r.updated_at = rules::IsoUtc(t);
    r.options = rules::AsStored(run.options);
    r.device = rules::AsStored(run.device);
    r.kopt_version = run.kopt_version;
    r.note = run.note;
    Query(db_,
          "INSERT INTO runs "
          "(id, created_at, updated_at, status, kopt_version, options, device, note) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
        .Bind(r.id, r.created_at, r.updated_at, RunStatusName(r.status), r.kopt_version,
              rules::DumpJson(r.options), rules::DumpJson(r.device), r.note)
        .Run();
    tx.Commit();
    return r;
  }

  std::optional<RunRecord> GetRun(const std::string& id) const override {
    std::lock_guard lock(mu_);
    Query q(db_, KOPT_RUN_SELECT "WHERE id = ?1");
    if (!q.Bind(id).Step()) return std::nullopt;
    return ReadRun(q);
  }

  std::optional<RunRecord> FindRun(const std::string& id_or_prefix) const override {
    std::lock_guard lock(mu_);
    std::string prefix = rules::NormalizePrefix(id_or_prefix);
    if (prefix.empty()) return std::nullopt;
    Transaction tx(db_, false);
    {
      Query q(db_, KOPT_RUN_SELECT "WHERE id = ?1");
      if (q.Bind(prefix).Step()) return ReadRun(q);
    }
    std::vector<std::string> matches;
    {
      Query q(db_, "SELECT id FROM runs WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT 6");
      q.Bind(prefix);
      while (q.Step()) matches.push_back(q.Text(0));
    }
    if (matches.empty()) return std::nullopt;
    if (matches.size() > 1) rules::ThrowAmbiguousPrefix(id_or_prefix, matches);
    Query q(db_, KOPT_RUN_SELECT "WHERE id = ?1");
    q.Bind(matches[0]).Step();
    return ReadRun(q);
  }

  std::vector<RunSummary> ListRuns(int limit) const override {
    std::lock_guard lock(mu_);
    Transaction tx(db_, false);
    std::vector<RunSummary> out;
    {
      Query q(db_, KOPT_RUN_SELECT "ORDER BY created_at DESC, rowid DESC LIMIT ?1");
      q.Bind(limit > 0 ? limit : -1);
      while (q.Step()) out.push_back({ReadRun(q), {}});
    }
    for (RunSummary& s : out) {
      Query q(db_,
              "SELECT t.task_index, t.name, t.status, "
              "(SELECT COUNT(*) FROM nodes n "
              " WHERE n.run_id = t.run_id AND n.task_index = t.task_index), "
              "(SELECT COUNT(*) FROM outcomes o "
              " WHERE o.run_id = t.run_id AND o.task_index = t.task_index), "
              "(SELECT MAX(o.speedup) FROM outcomes o "
              " WHERE o.run_id = t.run_id AND o.task_index = t.task_index "
              " AND o.verdict = 'measured'), t.finalists "
              "FROM tasks t WHERE t.run_id = ?1 ORDER BY t.task_index");
      q.Bind(s.run.id);
      while (q.Step()) {
        TaskSummary t;
        t.index = static_cast<int>(q.Int(0));
        t.name = q.Text(1);
        t.status = q.Enum(2, TaskStatusFromName);
        t.nodes = static_cast<int>(q.Int(3));
        t.outcomes = static_cast<int>(q.Int(4));
        t.best_speedup = q.OptDouble(5);
        if (auto w = rules::FinalistWinnerSpeedup(q.JsonCol(6))) t.best_speedup = w;
        s.tasks.push_back(std::move(t));
      }
    }
    return out;
  }

  void SetRunStatus(const std::string& run_id, RunStatus status, const std::string& note) override {
    std::lock_guard lock(mu_);
    Transaction tx(db_, true);
    Query(db_, "UPDATE runs SET status = ?2, note = ?3, updated_at = ?4 WHERE id = ?1")
        .Bind(run_id, RunStatusName(status), note, Now())
        .Run();
    RequireChanged("no run '" + run_id + "'");
    tx.Commit();
  }

  void SetRunSpent(const std::string& run_id, const BudgetSpent& spent) override {
    std::lock_guard lock(mu_);
    rules::CheckSpent(spent);
    Transaction tx(db_, true);
    WriteSpent(run_id, spent, Now());
    tx.Commit();
  }

  bool AddTask(const TaskRecord& task) override {
    std::lock_guard lock(mu_);
    if (task.best_node) rules::ThrowBadCall("a new task has no nodes, so no best node");
    Transaction tx(db_, true);
    std::string now = Now();
    TouchRun(task.run_id, now);
    {
      Query q(db_, "SELECT 1 FROM tasks WHERE run_id = ?1 AND task_index = ?2");
      if (q.Bind(task.run_id, task.index).Step()) return false;
    }
    Query(db_,
          "INSERT INTO tasks (run_id, task_index, name, path, task_hash, bundle, contract, status) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
        .Bind(task.run_id, task.index, task.name, task.path, task.task_hash,
              rules::DumpJson(rules::BundleToStored(task.bundle)),
              rules::DumpJson(rules::ContractToStored(task.contract)), TaskStatusName(task.status))
        .Run();
    tx.Commit();
    return true;
  }

  std::vector<TaskRecord> ListTasks(const std::string& run_id) const override {
    std::lock_guard lock(mu_);
    std::vector<TaskRecord> out;
    Query q(db_, KOPT_TASK_SELECT "WHERE run_id = ?1 ORDER BY task_index");
    q.Bind(run_id);
    while (q.Step()) out.push_back(ReadTask(q));
    return out;
  }

  std::optional<TaskRecord> GetTask(const std::string& run_id, int index) const override {
    std::lock_guard lock(mu_);
    Query q(db_, KOPT_TASK_SELECT "WHERE run_id = ?1 AND task_index = ?2");
    if (!q.Bind(run_id, index).Step()) return std::nullopt;
    return ReadTask(q);
  }

  void SetTaskStatus(const std::string& run_id, int index, TaskStatus status) override {
    std::lock_guard lock(mu_);
    Transaction tx(db_, true);
    TouchRun(run_id, Now());
    Query(db_, "UPDATE tasks SET status = ?3 WHERE run_id = ?1 AND task_index = ?2")
        .Bind(run_id, index, TaskStatusName(status))
        .Run();
    RequireChanged(fmt::format("run '{}' has no task {}", run_id, index));
    tx.Commit();
  }

  void SetTaskBest(const std::string& run_id, int index, int node) override {
    std::lock_guard lock(mu_);
    Transaction tx(db_, true);
    TouchRun(run_id, Now());
    RequireTask(run_id, index);
    if (!NodeExists(run_id, index, node))
      rules::ThrowBadCall("the best node must be a node of the task");
    Query(db_, "UPDATE tasks SET best_node = ?3 WHERE run_id = ?1 AND task_index = ?2")
        .Bind(run_id, index, node)
        .Run();
    tx.Commit();
  }

  void SetTaskFinalists(const std::string& run_id, int index, const Json& finalists) override {
    std::lock_guard lock(mu_);
    if (!finalists.is_array()) rules::ThrowBadCall("the finalists must be a JSON array");
    Transaction tx(db_, true);
    TouchRun(run_id, Now());
    RequireTask(run_id, index);
    Query(db_, "UPDATE tasks SET finalists = ?3 WHERE run_id = ?1 AND task_index = ?2")
        .Bind(run_id, index, rules::DumpJson(finalists))
        .Run();
    tx.Commit();
  }

  AddNodeResult AddNode(const NodeRecord& node) override {
    std::lock_guard lock(mu_);
    Transaction tx(db_, true);
    std::string now = Now();
    TouchRun(node.run_id, now);
    RequireTask(node.run_id, node.task_index);
    if (NodeExists(node.run_id, node.task_index, node.id)) return AddNodeResult::kDuplicateId;
    {
      Query q(db_,
              "SELECT 1 FROM nodes WHERE run_id = ?1 AND task_index = ?2 AND source_hash = ?3");
      if (q.Bind(node.run_id, node.task_index, node.source_hash).Step())
        return AddNodeResult::kDuplicateSource;
    }
    if (node.parent && !NodeExists(node.run_id, node.task_index, *node.parent))
      rules::ThrowBadCall("a node's parent must be recorded before it");
    Query(db_,
          "INSERT INTO nodes (run_id, task_index, node_id, parent_id, depth, move, proposer, "
          "expected, kind, name, source, source_hash, detail, created_at) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)")
        .Bind(node.run_id, node.task_index, node.id, node.parent, node.depth, node.move,
              node.proposer, node.expected, NodeKindName(node.kind), node.name, node.source,
              node.source_hash, rules::DumpJson(node.detail), now)
        .Run();
    tx.Commit();
    return AddNodeResult::kAdded;
  }

  std::vector<NodeRecord> ListNodes(const std::string& run_id, int task_index) const override {
    std::lock_guard lock(mu_);
    std::vector<NodeRecord> out;
    Query q(db_, KOPT_NODE_SELECT "WHERE n.run_id = ?1 AND n.task_index = ?2 ORDER BY n.node_id");
    q.Bind(run_id, task_index);
    while (q.Step()) out.push_back(ReadNode(q));
    return out;
  }

  std::vector<NodeRecord> NodesWithoutOutcome(const std::string& run_id,
                                              int task_index) const override {
    std::lock_guard lock(mu_);
    std::vector<NodeRecord> out;
    Query q(db_, KOPT_NODE_SELECT
            "WHERE n.run_id = ?1 AND n.task_index = ?2 AND NOT EXISTS "
            "(SELECT 1 FROM outcomes o "
            " WHERE o.run_id = n.run_id AND o.task_index = n.task_index AND o.node_id = n.node_id) "
            "ORDER BY n.node_id");
    q.Bind(run_id, task_index);
    while (q.Step()) out.push_back(ReadNode(q));
    return out;
  }

  bool RecordOutcome(const OutcomeRecord& o, const BudgetSpent& run_spent) override {
    std::lock_guard lock(mu_);
    rules::CheckOutcome(o);
    rules::CheckSpent(run_spent);
    Transaction tx(db_, true);
    std::string now = Now();
    RequireTask(o.run_id, o.task_index);
    if (!NodeExists(o.run_id, o.task_index, o.node))
      rules::ThrowBadCall("an outcome's node must be recorded first");
    {
      Query q(db_, "SELECT 1 FROM outcomes WHERE run_id = ?1 AND task_index = ?2 AND node_id = ?3");
      if (q.Bind(o.run_id, o.task_index, o.node).Step()) return false;
    }
    Query(db_,
          "INSERT INTO outcomes (run_id, task_index, node_id, verdict, outcome, evaluation, "
          "objective, time_ms, energy_mj, speedup, gpu_s, finished_at) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)")
        .Bind(o.run_id, o.task_index, o.node, o.verdict, rules::DumpJson(o.outcome),
              rules::DumpJson(o.evaluation), rules::FiniteOrNone(o.objective),
              rules::FiniteOrNone(o.time_ms), rules::FiniteOrNone(o.energy_mj),
              rules::FiniteOrNone(o.speedup), o.gpu_s, now)
        .Run();
    WriteSpent(o.run_id, run_spent, now);
    tx.Commit();
    return true;
  }

  std::optional<OutcomeRecord> GetOutcome(const std::string& run_id, int task_index,
                                          int node) const override {
    std::lock_guard lock(mu_);
    Query q(db_, KOPT_OUTCOME_SELECT "WHERE run_id = ?1 AND task_index = ?2 AND node_id = ?3");
    if (!q.Bind(run_id, task_index, node).Step()) return std::nullopt;
    return ReadOutcome(q);
  }

  bool HasOutcome(const std::string& run_id, int task_index, int node) const override {
    std::lock_guard lock(mu_);
    Query q(db_, "SELECT 1 FROM outcomes WHERE run_id = ?1 AND task_index = ?2 AND node_id = ?3");
    return q.Bind(run_id, task_index, node).Step();
  }

  std::vector<OutcomeRecord> ListOutcomes(const std::string& run_id,
                                          int task_index) const override {
    std::lock_guard lock(mu_);
    std::vector<OutcomeRecord> out;
    Query q(db_, KOPT_OUTCOME_SELECT "WHERE run_id = ?1 AND task_index = ?2 ORDER BY node_id");
    q.Bind(run_id, task_index);
    while (q.Step()) out.push_back(ReadOutcome(q));
    return out;
  }

  void PutProfile(const ProfileRecord& p) override {
    std::lock_guard lock(mu_);
    Transaction tx(db_, true);
    std::string now = Now();
    TouchRun(p.run_id, now);
    RequireTask(p.run_id, p.task_index);
    if (!NodeExists(p.run_id, p.task_index, p.node))
      rules::ThrowBadCall("a profile's node must be recorded first");
    Query(db_,
          "INSERT INTO profiles (run_id, task_index, node_id, profile, diagnoses, created_at) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
          "ON CONFLICT (run_id, task_index, node_id) DO UPDATE SET profile = excluded.profile, "
          "diagnoses = excluded.diagnoses, created_at = excluded.created_at")
        .Bind(p.run_id, p.task_index, p.node, rules::DumpJson(p.profile),
              rules::DumpJson(ToJson(p.diagnoses)), now)
        .Run();
    tx.Commit();
  }

  std::optional<ProfileRecord> GetProfile(const std::string& run_id, int task_index,
                                          int node) const override {
    std::lock_guard lock(mu_);
    Query q(db_, KOPT_PROFILE_SELECT "WHERE run_id = ?1 AND task_index = ?2 AND node_id = ?3");
    if (!q.Bind(run_id, task_index, node).Step()) return std::nullopt;
    return ReadProfile(q);
  }

  std::vector<ProfileRecord> ListProfiles(const std::string& run_id,
                                          int task_index) const override {
    std::lock_guard lock(mu_);
    std::vector<ProfileRecord> out;
    Query q(db_, KOPT_PROFILE_SELECT "WHERE run_id = ?1 AND task_index = ?2 ORDER BY node_id");
    q.Bind(run_id, task_index);
    while (q.Step()) out.push_back(ReadProfile(q));
    return out;
  }

 private:
  std::string Now() const { return rules::IsoUtc(now_()); }

  int PragmaInt(const char* sql) {
    Query q(db_, sql);
    return q.Step() ? static_cast<int>(q.Int(0)) : 0;
  }

  /// Creates the schema in a new file; refuses newer versions and files that
  /// are someone else's database.
  void EnsureSchema() {
    std::string file = db_.path().string();
    auto refuse_newer = [&](int version) {
      throw Error(
          fmt::format("The run store {} was written by a newer kopt "
                      "(schema version {}; this kopt reads up to {}): "
                      "upgrade kopt, or point this one at another file.",
                      file, version, kSchemaVersion));
    };
    auto refuse_foreign = [&] {
      throw Error(
          fmt::format("{} is an SQLite database but not a kopt run store: "
                      "move it aside or point kopt at another file.",
                      file));
    };
    int version = PragmaInt("PRAGMA user_version");
    if (version > kSchemaVersion) refuse_newer(version);
    if (version == kSchemaVersion) {
      if (PragmaInt("PRAGMA application_id") != kApplicationId) refuse_foreign();
      return;
    }
    Transaction tx(db_, true);
    version = PragmaInt("PRAGMA user_version");  // another process may have created it meanwhile
    if (version > kSchemaVersion) refuse_newer(version);
    if (version == kSchemaVersion) return;
    if (version == 1) {  // migrate: version 2 added tasks.finalists
      if (PragmaInt("PRAGMA application_id") != kApplicationId) refuse_foreign();
      db_.Exec(
          "ALTER TABLE tasks ADD COLUMN finalists TEXT NOT NULL DEFAULT '[]'; PRAGMA user_version "
          "= 2;",
          "migrate the run store to schema version 2");
      tx.Commit();
      return;
    }
    if (PragmaInt("PRAGMA application_id") != 0 ||
        PragmaInt("SELECT COUNT(*) FROM sqlite_master") != 0)
      refuse_foreign();
    db_.Exec(kSchema, "create the schema");
    db_.Exec(fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {};", kApplicationId,
                         kSchemaVersion)
                 .c_str(),
             "set the schema version");
    tx.Commit();
  }

  /// Throws std::invalid_argument unless the last statement changed a row.
  void RequireChanged(const std::string& what) {
    if (sqlite3_changes(db_.get()) == 0) rules::ThrowBadCall(what);
  }

  /// Stamps the run's updated_at; throws std::invalid_argument for an unknown run.
  void TouchRun(const std::string& run_id, const std::string& now) {
    Query(db_, "UPDATE runs SET updated_at = ?2 WHERE id = ?1").Bind(run_id, now).Run();
    RequireChanged("no run '" + run_id + "'");
  }

  void RequireTask(const std::string& run_id, int index) {
    Query q(db_, "SELECT 1 FROM tasks WHERE run_id = ?1 AND task_index = ?2");
    if (!q.Bind(run_id, index).Step())
      rules::ThrowBadCall(fmt::format("run '{}' has no task {}", run_id, index));
  }

  bool NodeExists(const std::string& run_id, int index, int node) {
    Query q(db_, "SELECT 1 FROM nodes WHERE run_id = ?1 AND task_index = ?2 AND node_id = ?3");
    return q.Bind(run_id, index, node).Step();
  }

  void WriteSpent(const std::string& run_id, const BudgetSpent& s, const std::string& now) {
    Query(db_,
          "UPDATE runs SET spent_wall_s = ?2, spent_gpu_s = ?3, spent_candidates = ?4, "
          "spent_llm_tokens = ?5, spent_llm_cost_usd = ?6, updated_at = ?7 WHERE id = ?1")
        .Bind(run_id, s.wall_s, s.gpu_s, s.candidates, s.llm_tokens, s.llm_cost_usd, now)
        .Run();
    RequireChanged("no run '" + run_id + "'");
  }

  WallClock now_;
  std::mt19937_64 rng_;
  mutable std::mutex mu_;
  mutable Db db_;  // statements are cached even by queries
};

}  // namespace

std::unique_ptr<RunStore> MakeSqliteRunStore(const std::filesystem::path& path, WallClock now) {
  return std::make_unique<SqliteRunStore>(path, std::move(now));
}

}  // namespace kopt
