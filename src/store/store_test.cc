#include "store/run_store.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;

// A wall clock tests set by hand; it moves 1 ms per reading unless frozen.
struct FakeClock {
  std::atomic<long long> ms{1796285520000LL};  // 2026-12-03T08:12:00.000Z
  std::atomic<bool> frozen{false};
  void Set(int hour, int minute) { ms = 1796256000000LL + (hour * 60LL + minute) * 60000LL; }
  WallClock Reader() {
    return [this] {
      long long t = frozen ? ms.load() : ms.fetch_add(1);
      return Clock::time_point(std::chrono::milliseconds(t));
    };
  }
};

// Records as JSON, so a mismatch prints every field.
Json J(const RunRecord& r) {
  return {{"id", r.id},
          {"created_at", r.created_at},
          {"updated_at", r.updated_at},
          {"status", RunStatusName(r.status)},
          {"options", r.options},
          {"device", r.device},
          {"kopt_version", r.kopt_version},
          {"spent", ToJson(r.spent)},
          {"note", r.note}};
}
Json J(const TaskRecord& t) {
  return {{"run_id", t.run_id},
          {"index", t.index},
          {"name", t.name},
          {"path", t.path},
          {"task_hash", t.task_hash},
          {"bundle", ToJson(t.bundle)},
          {"contract", ToJson(t.contract)},
          {"status", TaskStatusName(t.status)},
          {"best_node", t.best_node ? Json(*t.best_node) : Json()},
          {"finalists", t.finalists}};
}
Json J(const NodeRecord& n) {
  return {{"run_id", n.run_id},
          {"task_index", n.task_index},
          {"id", n.id},
          {"parent", n.parent ? Json(*n.parent) : Json()},
          {"depth", n.depth},
          {"move", n.move},
          {"proposer", n.proposer},
          {"expected", n.expected},
          {"kind", NodeKindName(n.kind)},
          {"name", n.name},
          {"source", n.source},
          {"source_hash", n.source_hash},
          {"detail", n.detail},
          {"created_at", n.created_at}};
}
Json Opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }
Json J(const OutcomeRecord& o) {
  return {{"run_id", o.run_id},
          {"task_index", o.task_index},
          {"node", o.node},
          {"verdict", o.verdict},
          {"outcome", o.outcome},
          {"evaluation", o.evaluation},
          {"objective", Opt(o.objective)},
          {"time_ms", Opt(o.time_ms)},
          {"energy_mj", Opt(o.energy_mj)},
          {"speedup", Opt(o.speedup)},
          {"gpu_s", o.gpu_s},
          {"finished_at", o.finished_at}};
}
Json J(const ProfileRecord& p) {
  return {{"run_id", p.run_id},   {"task_index", p.task_index},       {"node", p.node},
          {"profile", p.profile}, {"diagnoses", ToJson(p.diagnoses)}, {"created_at", p.created_at}};
}
template <class T>
Json J(const std::vector<T>& v) {
  Json a = Json::array();
  for (const auto& x : v) a.push_back(J(x));
  return a;
}

NewRun SomeRun(const std::string& note = "a test run") {
  NewRun r;
  r.options = {{"proposer", "expert"},
               {"search", "mcts"},
               {"objective", "time"},
               {"seed", 7},
               {"budget", ToJson(ParseBudget("10m,40"))},
               {"command_line", "kopt optimize t.py"}};
  r.device = {{"name", "NVIDIA H200"}, {"sm_count", 132}};
  r.kopt_version = "0.1.0";
  r.note = note;
  return r;
}

TaskRecord SomeTask(const std::string& run_id, int index, const std::string& name = "01_relu") {
  TaskRecord t;
  t.run_id = run_id;
  t.index = index;
  t.name = name;
  t.path = "/tasks/level1/" + name + ".py";
  t.task_hash = "hash-" + name;
  t.bundle.task_name = name;
  t.bundle.task_path = t.path;
  t.bundle.task_hash = t.task_hash;
  t.bundle.flops = 1024;
  t.bundle.min_bytes = 8192;
  t.bundle.floor_ms = 0.0021;
  t.bundle.floor_bound = "memory";
  t.bundle.graph = {{"nodes", Json::array({{{"op", "aten::relu"}}})}};
  t.bundle.flags = {"near_zero_output"};
  t.contract.precision = Precision::kTf32;
  t.contract.torch_ops = false;
  t.contract.second_shape = {{"batch_size", 8193}};
  t.contract.source = "/tasks/level1/" + name + ".contract.json";
  return t;
}

NodeRecord SomeNode(const std::string& run_id, int task, int id, std::optional<int> parent) {
  NodeRecord n;
  n.run_id = run_id;
  n.task_index = task;
  n.id = id;
  n.parent = parent;
  n.depth = parent ? 1 : 0;
  n.move = parent ? "BLOCK 256 -> 512" : "";
  n.proposer = "expert";
  n.expected = "fewer blocks, better occupancy";
  n.kind = parent ? NodeKind::kCuda : NodeKind::kReference;
  n.name = "n" + std::to_string(id) + ".cu";
  n.source = "__global__ void k" + std::to_string(id) + "() {}\n";
  n.source_hash = "src-" + std::to_string(id);
  n.detail = {{"knobs", {{"BLOCK", 512}}}};
  return n;
}

Measured SomeMeasured(double ms, double eager_ms) {
  Measured m;
  m.time_ms = Summarize({ms, ms * 1.01, ms * 0.99});
  m.host_ms = m.time_ms;
  m.eager_ms = Summarize({eager_ms});
  m.energy_mj_per_call = 0.25;
  return m;
}

BudgetSpent Spent(double gpu_s, long long candidates) {
  BudgetSpent s;
  s.wall_s = 12.5;
  s.gpu_s = gpu_s;
  s.candidates = candidates;
  s.llm_tokens = 1000;
  s.llm_cost_usd = 0.01;
  return s;
}

// ---------------------------------------------------------------------------
// The same suite against both implementations.

struct StoreKind {
  const char* name;
  std::unique_ptr<RunStore> (*make)(const fs::path& dir, WallClock now);
};

std::unique_ptr<RunStore> MakeSqlite(const fs::path& dir, WallClock now) {
  return MakeSqliteRunStore(dir / "store" / "runs.db", std::move(now));
}
std::unique_ptr<RunStore> MakeMemory(const fs::path&, WallClock now) {
  return MakeMemoryRunStore(std::move(now));
}

class RunStoreTest : public ::testing::TestWithParam<StoreKind> {
 protected:
  void SetUp() override {
    dir_ = testing::ScratchDir("store");
    store_ = GetParam().make(dir_, clock_.Reader());
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  fs::path dir_;
  FakeClock clock_;
  std::unique_ptr<RunStore> store_;
};

TEST_P(RunStoreTest, RunRoundTripAndStatus) {
  RunRecord r = store_->CreateRun(SomeRun());
  EXPECT_TRUE(std::regex_match(r.id, std::regex(R"(20261203-0812-[0-9a-f]{4})"))) << r.id;
  EXPECT_EQ(r.created_at, "2026-12-03T08:12:00.000Z");
  EXPECT_EQ(r.updated_at, r.created_at);
  EXPECT_EQ(r.status, RunStatus::kRunning);
  EXPECT_EQ(ToJson(r.spent), ToJson(BudgetSpent{}));
  EXPECT_EQ(r.options["budget"]["candidates"], 40);
  auto got = store_->GetRun(r.id);
  ASSERT_TRUE(got);
  EXPECT_EQ(J(*got), J(r));
  EXPECT_FALSE(store_->GetRun("20261203-0812-zzzz"));

  store_->SetRunSpent(r.id, Spent(3.5, 4));
  store_->SetRunStatus(r.id, RunStatus::kBudgetSpent, "wall time (10 min) spent");
  got = store_->GetRun(r.id);
  EXPECT_EQ(got->status, RunStatus::kBudgetSpent);
  EXPECT_EQ(got->note, "wall time (10 min) spent");
  EXPECT_EQ(ToJson(got->spent), ToJson(Spent(3.5, 4)));
  EXPECT_GT(got->updated_at, r.updated_at);
  EXPECT_EQ(got->created_at, r.created_at);

  EXPECT_THROW(store_->SetRunStatus("nope", RunStatus::kFailed, ""), std::invalid_argument);
  EXPECT_THROW(store_->SetRunSpent("nope", Spent(1, 1)), std::invalid_argument);
  for (RunStatus s : {RunStatus::kRunning, RunStatus::kFinished, RunStatus::kBudgetSpent,
                      RunStatus::kInterrupted, RunStatus::kFailed}) {
    store_->SetRunStatus(r.id, s, "");
    EXPECT_EQ(store_->GetRun(r.id)->status, s);
    EXPECT_EQ(RunStatusFromName(RunStatusName(s)), s);
  }
}

TEST_P(RunStoreTest, TaskRoundTripAndStatus) {
  std::string run = store_->CreateRun(SomeRun()).id;
  TaskRecord a = SomeTask(run, 0, "01_relu");
  TaskRecord b = SomeTask(run, 1, "02_softmax");
  b.contract = Contract{};
  ASSERT_TRUE(store_->AddTask(b));
  ASSERT_TRUE(store_->AddTask(a));
  EXPECT_FALSE(store_->AddTask(SomeTask(run, 0, "other")));  // index taken: nothing written
  auto tasks = store_->ListTasks(run);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(J(tasks[0]), J(a));  // index order, bundle and contract intact
  EXPECT_EQ(J(tasks[1]), J(b));
  EXPECT_EQ(tasks[0].contract.source, a.contract.source);
  EXPECT_EQ(tasks[0].contract.second_shape.at("batch_size"), 8193);
  EXPECT_EQ(J(*store_->GetTask(run, 1)), J(b));
  EXPECT_FALSE(store_->GetTask(run, 2));
  EXPECT_TRUE(store_->ListTasks("nope").empty());

  store_->SetTaskStatus(run, 0, TaskStatus::kRunning);
  EXPECT_EQ(store_->GetTask(run, 0)->status, TaskStatus::kRunning);
  ASSERT_EQ(store_->AddNode(SomeNode(run, 0, 0, std::nullopt)), AddNodeResult::kAdded);
  EXPECT_FALSE(store_->GetTask(run, 0)->best_node);
  store_->SetTaskBest(run, 0, 0);
  EXPECT_EQ(store_->GetTask(run, 0)->best_node, 0);
  EXPECT_THROW(store_->SetTaskBest(run, 0, 5), std::invalid_argument);
  EXPECT_TRUE(store_->GetTask(run, 0)->finalists.empty());
  Json finalists = Json::array({Json{
      {"node", 0}, {"name", "a"}, {"time_ms", 0.5}, {"winner", true}, {"speedup_vs_eager", 1.5}}});
  store_->SetTaskFinalists(run, 0, finalists);
  EXPECT_EQ(store_->GetTask(run, 0)->finalists, finalists);
  EXPECT_THROW(store_->SetTaskFinalists(run, 0, Json::object()), std::invalid_argument);
  EXPECT_THROW(store_->SetTaskFinalists(run, 7, finalists), std::invalid_argument);
  EXPECT_THROW(store_->SetTaskStatus(run, 7, TaskStatus::kFailed), std::invalid_argument);
  EXPECT_THROW(store_->AddTask(SomeTask("nope", 0)), std::invalid_argument);
}

TEST_P(RunStoreTest, NodesRoundTripInIdOrderAndRefuseDuplicates) {
  std::string run = store_->CreateRun(SomeRun()).id;
  store_->AddTask(SomeTask(run, 0));
  store_->AddTask(SomeTask(run, 1));
  NodeRecord root = SomeNode(run, 0, 0, std::nullopt);
  NodeRecord two = SomeNode(run, 0, 2, 0);
  NodeRecord one = SomeNode(run, 0, 1, 0);
  NodeRecord deep = SomeNode(run, 0, 3, 2);
  deep.depth = 2;
  deep.kind = NodeKind::kHybrid;
  deep.detail = {{"prompt", "make it \"faster\"\n\u00e9"}, {"tokens", 1234}};
  for (const auto* n : {&root, &two, &one, &deep})
    ASSERT_EQ(store_->AddNode(*n), AddNodeResult::kAdded);

  auto nodes = store_->ListNodes(run, 0);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0].id, 0);
  EXPECT_EQ(nodes[1].id, 1);
  EXPECT_EQ(nodes[2].id, 2);
  EXPECT_FALSE(nodes[0].parent);
  EXPECT_FALSE(nodes[0].created_at.empty());
  deep.created_at = nodes[3].created_at;
  EXPECT_EQ(J(nodes[3]), J(deep));

  // Duplicates are values; nothing is written.
  NodeRecord same_id = SomeNode(run, 0, 2, 0);
  same_id.source_hash = "fresh";
  EXPECT_EQ(store_->AddNode(same_id), AddNodeResult::kDuplicateId);
  NodeRecord same_source = SomeNode(run, 0, 9, 0);
  same_source.source_hash = two.source_hash;
  EXPECT_EQ(store_->AddNode(same_source), AddNodeResult::kDuplicateSource);
  EXPECT_EQ(store_->ListNodes(run, 0).size(), 4u);
  // The same source in another task, or another run, is a new candidate.
  EXPECT_EQ(store_->AddNode(SomeNode(run, 1, 0, std::nullopt)), AddNodeResult::kAdded);
  std::string run2 = store_->CreateRun(SomeRun()).id;
  store_->AddTask(SomeTask(run2, 0));
  EXPECT_EQ(store_->AddNode(SomeNode(run2, 0, 0, std::nullopt)), AddNodeResult::kAdded);

  // Bugs in the caller throw.
  EXPECT_THROW(store_->AddNode(SomeNode(run, 0, 20, 19)), std::invalid_argument);  // no parent 19
  EXPECT_THROW(store_->AddNode(SomeNode(run, 5, 0, std::nullopt)), std::invalid_argument);
  EXPECT_THROW(store_->AddNode(SomeNode("nope", 0, 0, std::nullopt)), std::invalid_argument);
  EXPECT_EQ(store_->ListNodes(run, 0).size(), 4u);
  EXPECT_TRUE(store_->ListNodes(run, 7).empty());
}

TEST_P(RunStoreTest, OutcomesRoundTripWithTheirBudget) {
  std::string run = store_->CreateRun(SomeRun()).id;
  store_->AddTask(SomeTask(run, 0));
  store_->AddNode(SomeNode(run, 0, 0, std::nullopt));
  store_->AddNode(SomeNode(run, 0, 1, 0));
  store_->AddNode(SomeNode(run, 0, 2, 0));

  OutcomeRecord measured = MakeOutcomeRecord(run, 0, 1, SomeMeasured(0.5, 1.0));
  EXPECT_EQ(measured.verdict, "measured");
  EXPECT_DOUBLE_EQ(*measured.time_ms, 0.5);
  EXPECT_DOUBLE_EQ(*measured.speedup, 2.0);
  EXPECT_DOUBLE_EQ(*measured.energy_mj, 0.25);
  measured.objective = 0.5;
  measured.gpu_s = 1.25;
  measured.evaluation = {{"samples_ms", {0.5, 0.505, 0.495}}, {"verify", {{"max_abs", 1e-7}}}};
  ASSERT_TRUE(store_->RecordOutcome(measured, Spent(1.25, 1)));
  EXPECT_EQ(ToJson(store_->GetRun(run)->spent), ToJson(Spent(1.25, 1)));

  OutcomeRecord failed = MakeOutcomeRecord(run, 0, 2, BuildFailed{"k.cu(3): error: expected ';'"});
  failed.gpu_s = 0;
  EXPECT_FALSE(failed.time_ms);
  EXPECT_FALSE(failed.speedup);
  ASSERT_TRUE(store_->RecordOutcome(failed, Spent(1.25, 2)));

  // Compiler logs may hold any bytes; a NaN is no value (as SQLite stores it).
  store_->AddNode(SomeNode(run, 0, 3, 0));
  OutcomeRecord odd = MakeOutcomeRecord(run, 0, 3, BuildFailed{"bad byte \xff here"});
  odd.objective = std::nan("");
  ASSERT_TRUE(store_->RecordOutcome(odd, Spent(1.25, 3)));
  EXPECT_EQ(store_->GetOutcome(run, 0, 3)->outcome["log"], "bad byte \ufffd here");
  EXPECT_FALSE(store_->GetOutcome(run, 0, 3)->objective);

  // A second outcome for a node is refused, and the budget stays as it was.
  EXPECT_FALSE(store_->RecordOutcome(measured, Spent(99, 99)));
  EXPECT_EQ(ToJson(store_->GetRun(run)->spent), ToJson(Spent(1.25, 3)));

  auto got = store_->GetOutcome(run, 0, 1);
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->finished_at.empty());
  measured.finished_at = got->finished_at;
  EXPECT_EQ(J(*got), J(measured));
  EXPECT_EQ(got->outcome["verdict"], "measured");
  EXPECT_EQ(store_->GetOutcome(run, 0, 2)->outcome["log"], "k.cu(3): error: expected ';'");
  EXPECT_FALSE(store_->GetOutcome(run, 0, 2)->objective);
  EXPECT_FALSE(store_->GetOutcome(run, 0, 0));
  EXPECT_TRUE(store_->HasOutcome(run, 0, 1));
  EXPECT_FALSE(store_->HasOutcome(run, 0, 0));
  EXPECT_FALSE(store_->HasOutcome(run, 3, 0));
  auto all = store_->ListOutcomes(run, 0);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].node, 1);
  EXPECT_EQ(all[1].node, 2);

  EXPECT_THROW(
      store_->RecordOutcome(MakeOutcomeRecord(run, 0, 9, TimedOut{"run", 10}), Spent(2, 3)),
      std::invalid_argument);
  OutcomeRecord bad = MakeOutcomeRecord(run, 0, 0, TimedOut{"run", 10});
  bad.verdict = "fast";
  EXPECT_THROW(store_->RecordOutcome(bad, Spent(2, 3)), std::invalid_argument);
  EXPECT_FALSE(store_->HasOutcome(run, 0, 0));
}

TEST_P(RunStoreTest, NodesWithoutOutcomeAreWhatWasInFlight) {
  std::string run = store_->CreateRun(SomeRun()).id;
  store_->AddTask(SomeTask(run, 0));
  store_->AddTask(SomeTask(run, 1));
  for (int id = 0; id < 6; ++id)
    store_->AddNode(SomeNode(run, 0, id, id ? std::optional<int>(0) : std::nullopt));
  store_->AddNode(SomeNode(run, 1, 0, std::nullopt));
  for (int id : {0, 1, 3})
    store_->RecordOutcome(MakeOutcomeRecord(run, 0, id, Crashed{"oom", "x"}), Spent(0, 1));
  auto pending = store_->NodesWithoutOutcome(run, 0);
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[0].id, 2);
  EXPECT_EQ(pending[1].id, 4);
  EXPECT_EQ(pending[2].id, 5);
  EXPECT_EQ(pending[0].source, SomeNode(run, 0, 2, 0).source);  // enough to measure it again
  EXPECT_EQ(store_->NodesWithoutOutcome(run, 1).size(), 1u);
  EXPECT_TRUE(store_->NodesWithoutOutcome(run, 2).empty());
}

TEST_P(RunStoreTest, ProfilesRoundTripAndReplace) {
  std::string run = store_->CreateRun(SomeRun()).id;
  store_->AddTask(SomeTask(run, 0));
  store_->AddNode(SomeNode(run, 0, 0, std::nullopt));
  store_->AddNode(SomeNode(run, 0, 1, 0));
  ProfileRecord p{run, 0, 1, {{"tier", "static"}, {"registers", 32}}, {}, ""};
  store_->PutProfile(p);
  auto got = store_->GetProfile(run, 0, 1);
  ASSERT_TRUE(got);
  p.created_at = got->created_at;
  EXPECT_EQ(J(*got), J(p));
  p.profile = {{"tier", "ncu"}, {"dram__throughput", 0.91}};
  Diagnosis d;
  d.tool = "dram_at_roof";
  d.severity = "critical";
  d.estimated_gain = 0.4;
  d.evidence = {{"dram_pct", 91.5}};
  d.advice = "Move fewer bytes.";
  d.suggested_moves = {"fuse"};
  p.diagnoses = {d};
  store_->PutProfile(p);  // a deeper tier replaces the first
  store_->PutProfile(ProfileRecord{run, 0, 0, Json::object(), {}, ""});
  auto all = store_->ListProfiles(run, 0);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].node, 0);
  EXPECT_EQ(all[1].profile["tier"], "ncu");
  ASSERT_EQ(all[1].diagnoses.size(), 1u);
  EXPECT_EQ(ToJson(all[1].diagnoses), ToJson(p.diagnoses));
  EXPECT_EQ(all[1].diagnoses[0].evidence, d.evidence);
  EXPECT_FALSE(store_->GetProfile(run, 0, 5));
  EXPECT_THROW(store_->PutProfile(ProfileRecord{run, 0, 5, {}, {}, ""}), std::invalid_argument);
}

TEST_P(RunStoreTest, FindsRunsByUniquePrefix) {
  clock_.Set(8, 12);
  std::string a = store_->CreateRun(SomeRun("a")).id;
  clock_.Set(8, 13);
  std::string b = store_->CreateRun(SomeRun("b")).id;
  clock_.Set(9, 0);
  std::string c = store_->CreateRun(SomeRun("c")).id;
  EXPECT_EQ(store_->FindRun(a)->note, "a");
  EXPECT_EQ(store_->FindRun("20261203-0812")->id, a);
  EXPECT_EQ(store_->FindRun("20261203-09")->id, c);
  std::string upper = b;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  EXPECT_EQ(store_->FindRun(upper)->id, b);  // typed by a person
  EXPECT_FALSE(store_->FindRun("2027"));
  EXPECT_FALSE(store_->FindRun(""));
  try {
    store_->FindRun("20261203-08");
    ADD_FAILURE() << "an ambiguous prefix was accepted";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(a), std::string::npos) << msg;
    EXPECT_NE(msg.find(b), std::string::npos) << msg;
    EXPECT_EQ(msg.find(c), std::string::npos) << msg;
    EXPECT_NE(msg.find("type more of the id"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

TEST_P(RunStoreTest, ListsRunsNewestFirstWithTheirTasks) {
  clock_.Set(8, 0);
  std::string old_run = store_->CreateRun(SomeRun("old")).id;
  clock_.Set(10, 0);
  clock_.frozen = true;  // same created_at: creation order decides
  std::string first = store_->CreateRun(SomeRun("first")).id;
  std::string second = store_->CreateRun(SomeRun("second")).id;
  clock_.frozen = false;
  clock_.Set(9, 0);
  std::string middle = store_->CreateRun(SomeRun("middle")).id;

  store_->AddTask(SomeTask(middle, 0, "01_relu"));
  store_->AddTask(SomeTask(middle, 1, "02_softmax"));
  for (int id = 0; id < 4; ++id)
    store_->AddNode(SomeNode(middle, 0, id, id ? std::optional<int>(0) : std::nullopt));
  auto add = [&](int node, const Outcome& o) {
    store_->RecordOutcome(MakeOutcomeRecord(middle, 0, node, o), {});
  };
  add(0, SomeMeasured(1.0, 1.0));
  add(1, SomeMeasured(0.25, 1.0));
  add(2, SomeMeasured(0.5, 1.0));
  add(3, Incorrect{{"out0 differs"}});
  store_->SetTaskStatus(middle, 0, TaskStatus::kFinished);

  auto runs = store_->ListRuns(0);
  ASSERT_EQ(runs.size(), 4u);
  std::vector<std::string> notes;
  for (const auto& r : runs) notes.push_back(r.run.note);
  EXPECT_EQ(notes, (std::vector<std::string>{"second", "first", "middle", "old"}));
  const RunSummary& m = runs[2];
  ASSERT_EQ(m.tasks.size(), 2u);
  EXPECT_EQ(m.tasks[0].name, "01_relu");
  EXPECT_EQ(m.tasks[0].status, TaskStatus::kFinished);
  EXPECT_EQ(m.tasks[0].nodes, 4);
  EXPECT_EQ(m.tasks[0].outcomes, 4);
  ASSERT_TRUE(m.tasks[0].best_speedup);
  EXPECT_DOUBLE_EQ(*m.tasks[0].best_speedup, 4.0);
  EXPECT_EQ(m.tasks[1].name, "02_softmax");
  EXPECT_FALSE(m.tasks[1].best_speedup);
  // Once the finalists are re-timed together, the winner's number is the one listed.
  store_->SetTaskFinalists(
      middle, 0,
      Json::array(
          {Json{{"node", 2}, {"time_ms", 0.55}, {"winner", false}, {"speedup_vs_eager", 1.8}},
           Json{{"node", 1}, {"time_ms", 0.3}, {"winner", true}, {"speedup_vs_eager", 3.3}}}));
  EXPECT_DOUBLE_EQ(*store_->ListRuns(0)[2].tasks[0].best_speedup, 3.3);
  EXPECT_TRUE(runs[0].tasks.empty());

  auto two = store_->ListRuns(2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].run.id, second);
  EXPECT_EQ(two[1].run.id, first);
}

INSTANTIATE_TEST_SUITE_P(BothStores, RunStoreTest,
                         ::testing::Values(StoreKind{"Sqlite", MakeSqlite},
                                           StoreKind{"Memory", MakeMemory}),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------
// SQLite only.

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::ScratchDir("sqlite-store");
    path_ = dir_ / "nested" / "folder" / "runs.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void RawExec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }

  std::string RawText(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }

  /// The message of the kopt::Error that opening the store throws.
  std::string OpenError() {
    try {
      MakeSqliteRunStore(path_);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "the store opened";
    return "";
  }

  fs::path dir_;
  fs::path path_;
};

// One sentence that says what to do: no line breaks, ends with a full stop,
// an instruction after a colon.
void ExpectOneSentence(const std::string& msg) {
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  ASSERT_FALSE(msg.empty());
  EXPECT_EQ(msg.back(), '.') << msg;
  EXPECT_NE(msg.find(": "), std::string::npos) << msg;
}

TEST_F(SqliteStoreTest, CreatesAWalFileAndReopensWithEverything) {
  std::string run;
  Json before;
  {
    auto store = MakeSqliteRunStore(path_);
    EXPECT_TRUE(fs::exists(path_));
    run = store->CreateRun(SomeRun()).id;
    store->AddTask(SomeTask(run, 0));
    store->AddNode(SomeNode(run, 0, 0, std::nullopt));
    store->AddNode(SomeNode(run, 0, 1, 0));
    store->AddNode(SomeNode(run, 0, 2, 1));
    OutcomeRecord o = MakeOutcomeRecord(run, 0, 1, SomeMeasured(0.5, 1.0));
    o.objective = 0.5;
    o.gpu_s = 0.75;
    store->RecordOutcome(o, Spent(0.75, 1));
    Diagnosis d;
    d.tool = "memory_bound";
    store->PutProfile({run, 0, 1, {{"tier", "ncu"}}, {d}, ""});
    store->SetTaskBest(run, 0, 1);
    before = {J(*store->GetRun(run)), J(store->ListTasks(run)), J(store->ListNodes(run, 0)),
              J(store->ListOutcomes(run, 0)), J(store->ListProfiles(run, 0))};
  }
  EXPECT_EQ(RawText("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawText("PRAGMA user_version"), "2");
  auto store = MakeSqliteRunStore(path_);
  Json after = {J(*store->GetRun(run)), J(store->ListTasks(run)), J(store->ListNodes(run, 0)),
                J(store->ListOutcomes(run, 0)), J(store->ListProfiles(run, 0))};
  EXPECT_EQ(after, before);
  ASSERT_EQ(store->NodesWithoutOutcome(run, 0).size(), 2u);
}

TEST_F(SqliteStoreTest, OthersReadWhileOneWrites) {
  auto writer = MakeSqliteRunStore(path_);
  std::string run = writer->CreateRun(SomeRun()).id;
  writer->AddTask(SomeTask(run, 0));
  writer->AddTask(SomeTask(run, 1));
  auto second_writer = MakeSqliteRunStore(path_);  // another process's connection, in effect
  auto reader = MakeSqliteRunStore(path_);
  constexpr int kNodes = 150;
  std::atomic<int> failures{0};
  auto write = [&](RunStore* store, int task) {
    try {
      for (int id = 0; id < kNodes; ++id) {
        store->AddNode(SomeNode(run, task, id, id ? std::optional<int>(id - 1) : std::nullopt));
        store->RecordOutcome(MakeOutcomeRecord(run, task, id, Crashed{"oom", "x"}),
                             Spent(id, id + 1));
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      ++failures;
    }
  };
  std::thread t0(write, writer.get(), 0);
  std::thread t1(write, second_writer.get(), 1);
  size_t seen = 0;
  int reads = 0;
  while (seen < 2 * kNodes && failures == 0) {
    auto runs = reader->ListRuns(0);
    if (runs.size() != 1 || runs[0].tasks.size() != 2) {
      ADD_FAILURE() << "the reader saw " << runs.size() << " runs";
      break;
    }
    size_t now = runs[0].tasks[0].outcomes + runs[0].tasks[1].outcomes;
    EXPECT_GE(now, seen);  // a reader sees committed work only, never going back
    seen = now;
    ++reads;
  }
  t0.join();
  t1.join();
  EXPECT_EQ(reader->ListOutcomes(run, 0).size(), static_cast<size_t>(kNodes));
  EXPECT_EQ(reader->ListOutcomes(run, 1).size(), static_cast<size_t>(kNodes));
  EXPECT_GT(reads, 1);
}

TEST_F(SqliteStoreTest, RefusesADatabaseFromANewerKopt) {
  MakeSqliteRunStore(path_)->CreateRun(SomeRun());
  RawExec("PRAGMA user_version = 3");
  std::string msg = OpenError();
  ExpectOneSentence(msg);
  EXPECT_NE(msg.find("newer kopt"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path_.string()), std::string::npos) << msg;
}

// A run store written by schema version 1 (the H200 run in tests/data/runs)
// opens, gains tasks.finalists (empty) and keeps everything else.
TEST_F(SqliteStoreTest, MigratesAVersionOneStore) {
  fs::create_directories(path_.parent_path());
  fs::copy_file(testing::SourceDir() / "tests/data/runs/h200_tune_8tasks.db", path_);
  EXPECT_EQ(RawText("PRAGMA user_version"), "1");
  auto store = MakeSqliteRunStore(path_);
  EXPECT_EQ(RawText("PRAGMA user_version"), "2");
  auto runs = store->ListRuns(0);
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].tasks.size(), 8u);
  auto tasks = store->ListTasks(runs[0].run.id);
  ASSERT_EQ(tasks.size(), 8u);
  EXPECT_TRUE(tasks[0].finalists.empty());
  EXPECT_EQ(tasks[0].name, "01_relu");
  EXPECT_EQ(store->ListOutcomes(runs[0].run.id, 0).size(), 6u);
  store->SetTaskFinalists(runs[0].run.id, 0, Json::array({Json{{"node", 0}, {"winner", true}}}));
  EXPECT_EQ(MakeSqliteRunStore(path_)->GetTask(runs[0].run.id, 0)->finalists.size(), 1u);
}

// The diagnoses column stays JSON text in the format it always had (an
// array of ToJson(Diagnosis)), and a column holding a whole diagnosis report
// (kopt profile --json) still reads as its findings.
TEST_F(SqliteStoreTest, DiagnosesAreStoredAsJsonText) {
  Diagnosis d;
  d.tool = "warp_stalls";
  d.severity = "critical";
  d.estimated_gain = 0.3;
  d.evidence = {{"stall_long_scoreboard", 39.66}};
  d.advice = "Prefetch further ahead.";
  d.suggested_moves = {"software_pipelining"};
  std::string run;
  {
    auto store = MakeSqliteRunStore(path_);
    run = store->CreateRun(SomeRun()).id;
    store->AddTask(SomeTask(run, 0));
    store->AddNode(SomeNode(run, 0, 0, std::nullopt));
    store->PutProfile({run, 0, 0, Json::object(), {d}, ""});
  }
  EXPECT_EQ(Json::parse(RawText("SELECT diagnoses FROM profiles")), Json::array({ToJson(d)}));
  Json report{{"call_diagnoses", {{{"tool", "host_overhead"}, {"estimated_gain", 0.1}}}},
              {"kernels", {{{"kernel", "k"}, {"diagnoses", {ToJson(d)}}}}}};
  RawExec("UPDATE profiles SET diagnoses = '" + report.dump() + "'");
  auto got = MakeSqliteRunStore(path_)->GetProfile(run, 0, 0);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->diagnoses.size(), 2u);
  EXPECT_EQ(got->diagnoses[0].tool, "host_overhead");
  EXPECT_EQ(ToJson(got->diagnoses[1]), ToJson(d));
}

TEST_F(SqliteStoreTest, RefusesAFileThatIsNotADatabase) {
  fs::create_directories(path_.parent_path());
  std::string text;
  for (int i = 0; i < 200; ++i) text += "this is a text file, not a database\n";
  std::ofstream(path_) << text;
  std::string msg = OpenError();
  ExpectOneSentence(msg);
  EXPECT_NE(msg.find("not a kopt run store"), std::string::npos) << msg;
  std::ifstream in(path_);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), text);  // left as it was
}

TEST_F(SqliteStoreTest, ReportsACorruptFileInOneSentence) {
  {
    auto store = MakeSqliteRunStore(path_);
    std::string run = store->CreateRun(SomeRun()).id;
    store->AddTask(SomeTask(run, 0));
    for (int id = 0; id < 50; ++id)
      store->AddNode(SomeNode(run, 0, id, id ? std::optional<int>(0) : std::nullopt));
  }  // closed: everything is in the main file now
  ASSERT_FALSE(fs::exists(path_.string() + "-wal"));
  auto size = fs::file_size(path_);
  ASSERT_GT(size, 8192u);
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);  // every page but the first (the header and the schema)
    f << std::string(size - 4096, '\xab');
  }
  try {
    auto store = MakeSqliteRunStore(path_);
    store->ListRuns(0);
    ADD_FAILURE() << "a corrupt file was read";
  } catch (const Error& e) {
    std::string msg = e.what();
    ExpectOneSentence(msg);
    EXPECT_NE(msg.find("is corrupt"), std::string::npos) << msg;
  }
}

TEST_F(SqliteStoreTest, RefusesSomeoneElsesDatabase) {
  fs::create_directories(path_.parent_path());
  RawExec("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)");
  std::string msg = OpenError();
  ExpectOneSentence(msg);
  EXPECT_NE(msg.find("not a kopt run store"), std::string::npos) << msg;
}

TEST_F(SqliteStoreTest, RefusesAnUncreatableFolder) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  path_ = dir_ / "file" / "runs.db";
  std::string msg = OpenError();
  ExpectOneSentence(msg);
  EXPECT_NE(msg.find("Cannot create the folder"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------
// kill -9: a child records nodes and outcomes as fast as it can, like the
// optimize loop (re-measuring first what its predecessor left in flight), and
// is killed at a random moment. The file must open with every finished thing
// whole and the spent budget equal to what the recorded outcomes cost.

// What the child records for node `id`, so the parent can check every byte.
int SampleCount(int id) { return 100 + (id * 37) % 400; }
double GpuSeconds(int id) { return (1 + id % 13) / 1024.0; }  // exact in binary: sums are exact
double Sample(int id, int i) { return 0.001 * ((id * 131 + i * 7) % 1000); }

OutcomeRecord ChildOutcome(const std::string& run, int id) {
  Measured m = SomeMeasured(0.1 + id % 7, 1.0);
  OutcomeRecord o = MakeOutcomeRecord(run, 0, id, m);
  Json samples = Json::array();
  double sum = 0;
  for (int i = 0; i < SampleCount(id); ++i) {
    samples.push_back(Sample(id, i));
    sum += Sample(id, i);
  }
  o.evaluation = {{"node", id}, {"samples_ms", samples}, {"sum", sum}};
  o.objective = *o.time_ms;
  o.gpu_s = GpuSeconds(id);
  return o;
}

/// Opens the store, tells the parent on `ready_fd` once it is open, then
/// works until killed.
[[noreturn]] void KillableChild(const fs::path& path, int ready_fd) {
  try {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    auto store = MakeSqliteRunStore(path);
    auto runs = store->ListRuns(1);
    std::string run = runs.empty() ? store->CreateRun(SomeRun("kill -9")).id : runs[0].run.id;
    if (!store->GetTask(run, 0)) store->AddTask(SomeTask(run, 0));
    BudgetSpent spent = store->GetRun(run)->spent;
    if (write(ready_fd, "r", 1) != 1) _exit(7);
    auto record = [&](int id) {
      spent.gpu_s += GpuSeconds(id);
      spent.candidates += 1;
      if (!store->RecordOutcome(ChildOutcome(run, id), spent)) _exit(5);
    };
    for (const NodeRecord& n : store->NodesWithoutOutcome(run, 0)) record(n.id);
    int next = static_cast<int>(store->ListNodes(run, 0).size());
    while (std::chrono::steady_clock::now() < deadline) {
      NodeRecord n =
          SomeNode(run, 0, next, next ? std::optional<int>((next - 1) / 2) : std::nullopt);
      n.source += std::string(64 + next % 2000, 'x');  // varied sizes: records straddle pages
      if (store->AddNode(n) != AddNodeResult::kAdded) _exit(6);
      record(next++);
    }
    _exit(4);  // never killed: the parent is gone
  } catch (...) {
    _exit(3);
  }
}

TEST(SqliteKill, NothingFinishedIsLostAndNothingIsHalfWritten) {
  fs::path dir = testing::ScratchDir("store-kill");
  fs::path path = dir / "runs.db";
  unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int kRounds = 45;
  int last_outcomes = 0;
  for (int round = 0; round < kRounds; ++round) {
    // A third of the kills land while the child starts (creating the file,
    // the schema, the run), the rest while it records, at any moment of a
    // write; the last round runs long enough to record plenty.
    bool in_loop = round % 3 != 0;
    int delay_us =
        round == kRounds - 1 ? 100000 : static_cast<int>(rng() % (in_loop ? 20000 : 12000));
    SCOPED_TRACE(fmt::format("round {}: kill {} us after {}", round, delay_us,
                             in_loop ? "opening" : "fork"));
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(ready[0]);
      KillableChild(path, ready[1]);
    }
    close(ready[1]);
    char byte = 0;
    if (in_loop) {
      EXPECT_EQ(read(ready[0], &byte, 1), 1) << "the child died before opening the store";
    }
    usleep(delay_us);
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    close(ready[0]);  // only now: the child may still be about to write to it
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the child stopped by itself: exit code "
        << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ", signal "
        << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);

    auto store = MakeSqliteRunStore(path);  // opens after the crash
    auto runs = store->ListRuns(0);
    ASSERT_LE(runs.size(), 1u);
    if (runs.empty()) continue;
    const std::string& run = runs[0].run.id;
    if (!store->GetTask(run, 0)) continue;
    auto nodes = store->ListNodes(run, 0);
    auto outcomes = store->ListOutcomes(run, 0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      ASSERT_EQ(nodes[i].id, static_cast<int>(i));  // no gaps
      ASSERT_EQ(nodes[i].source.size(),
                SomeNode(run, 0, nodes[i].id, {}).source.size() + 64 + i % 2000);
    }
    double gpu_s = 0;
    for (const OutcomeRecord& o : outcomes) {
      ASSERT_LT(o.node, static_cast<int>(nodes.size()));  // every outcome's node exists
      gpu_s += o.gpu_s;
      if (o.node + 2 < last_outcomes && round != kRounds - 1) continue;  // checked whole last round
      OutcomeRecord want = ChildOutcome(run, o.node);
      want.finished_at = o.finished_at;
      ASSERT_EQ(J(o), J(want));  // whole, to the last sample
    }
    BudgetSpent spent = runs[0].run.spent;
    ASSERT_EQ(spent.gpu_s, gpu_s);
    ASSERT_EQ(spent.candidates, static_cast<long long>(outcomes.size()));
    // Only the node being measured when the child died may lack an outcome.
    ASSERT_LE(store->NodesWithoutOutcome(run, 0).size(), 1u);
    ASSERT_GE(static_cast<int>(outcomes.size()), last_outcomes);
    last_outcomes = static_cast<int>(outcomes.size());
  }
  EXPECT_GT(last_outcomes, 10) << "the children recorded too little for the test to mean anything";
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
    sqlite3_finalize(st);
    ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA foreign_key_check", -1, &st, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE) << "a row breaks a foreign key";
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kopt
