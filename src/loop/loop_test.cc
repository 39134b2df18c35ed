// The whole loop on the replay runner (recorded outcomes, no GPU): the tuner
// and the replay proposer, the run store, budgets, callbacks and resume.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/hash.h"
#include "loop/tuner.h"
#include "propose/knobs.h"
#include "run/replay_runner.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

// A marked kernel: two knobs and a constraint, as a shipped solution has.
const char* kKernel = R"(// a synthetic kernel with knobs
#include <kopt/abi.h>
#define THREADS 128  // kopt:knob THREADS 128 64..1024*2 threads per block
#define ILP 1        // kopt:knob ILP 1 {1,2,4,8} float4s per thread
// kopt:constraint THREADS*ILP <= 4096
extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, cudaStream_t s) { return 0; }
)";

// The landscape the recorded "measurements" follow: best at THREADS=256,
// ILP=4; THREADS=1024 with ILP=4 was wrong (a register-array overrun).
double TimeMs(long long threads, long long ilp) {
  return 0.5 * (1 + 0.15 * std::fabs(std::log2(threads / 256.0))) *
         (1 + 0.1 * std::fabs(std::log2(ilp / 4.0)));
}

Measured MeasuredAt(double ms, double eager_ms) {
  Measured m;
  m.time_ms = Summarize({ms * 0.99, ms, ms * 1.01});
  m.eager_ms = Summarize({eager_ms, eager_ms, eager_ms});
  m.energy_mj_per_call = ms * 10;
  return m;
}

TaskBundle Bundle(const std::string& name) {
  TaskBundle b;
  b.task_name = name;
  b.task_hash = ContentHash({name});
  b.outputs.push_back(TensorSpec{"out0", "output", "float32", {1024}, {1}});
  b.eager_ms = Summarize({1.0, 1.0, 1.0});
  b.compile_ms = Summarize({0.8, 0.8, 0.8});
  b.floor_ms = 0.3;
  return b;
}

// Replay data for every valid configuration of kKernel.
ReplayData KernelReplay(const std::string& task) {
  ReplayData d;
  d.device.name = "NVIDIA H200 (recorded)";
  d.device.available = true;
  d.bundles[task] = Bundle(task);
  d.rejudge = false;
  KnobSpace space = KnobSpace::Parse(kKernel, "kernel.cu");
  for (const KnobConfig& c : space.Enumerate()) {
    std::string src = space.Apply(c);
    EvalRecord r;
    r.source_hash = ContentHash({src});
    r.candidate_kind = "cuda";
    r.verify_s = 0.2;
    r.time_s = 0.3;
    if (c.at("THREADS") == 1024 && c.at("ILP") == 4)
      r.outcome = Incorrect{{"output 0 is off by 0.3 (relative L2) against the float64 truth"}};
    else
      r.outcome = MeasuredAt(TimeMs(c.at("THREADS"), c.at("ILP")), 1.0);
    d.records[r.source_hash] = r;
  }
  return d;
}

// Counts evaluations per source hash (and may be slowed down).
class CountingRunner : public Runner {
 public:
  CountingRunner(std::unique_ptr<Runner> inner, int delay_ms = 0, fs::path log = {})
      : inner_(std::move(inner)), delay_ms_(delay_ms), log_(std::move(log)) {}
  const DeviceInfo& Device() override { return inner_->Device(); }
  const Ceilings& DeviceCeilings() override { return inner_->DeviceCeilings(); }
  TaskBundle Bundle(const Task& t, bool b, bool c) override { return inner_->Bundle(t, b, c); }
  EvalRecord Evaluate(const Task& t, const TaskBundle& b, const Candidate& c,
                      const EvalOptions& o) override {
    if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    EvalRecord r = inner_->Evaluate(t, b, c, o);
    ++counts[ContentHash({c.source})];
    ++total;
    if (!log_.empty()) {
      FILE* f = std::fopen(log_.c_str(), "a");
      std::fprintf(f, "%s\n", ContentHash({c.source}).c_str());
      std::fclose(f);
    }
    return r;
  }
  std::map<std::string, int> counts;
  int total = 0;

 private:
  std::unique_ptr<Runner> inner_;
  int delay_ms_;
  fs::path log_;
};

LoopTask KernelTask(const fs::path& dir) {
  LoopTask t;
  t.task.path = dir / "synthetic.py";
  t.task.name = "synthetic";
  if (!fs::exists(t.task.path)) WriteTextFileAtomic(t.task.path, "# a task recorded elsewhere\n");
  Candidate c;
  c.kind = CandidateKind::kCuda;
  c.name = "kernel.cu";
  c.source = kKernel;
  c.path = dir / "kernel.cu";
  t.from = c;
  return t;
}

LoopOptions TuneOptions(const fs::path& dir, const std::string& budget) {
  LoopOptions o;
  o.proposer = "tune";
  o.search = "mcts";
  o.budget = ParseBudget(budget);
  o.pipeline = 2;
  o.finalists = 3;
  o.scratch = dir / "scratch";
  o.seed = 7;
  return o;
}

TEST(Loop, TheTunerFindsTheBestConfigurationAndRecordsEveryStep) {
  fs::path dir = testing::ScratchDir("loop-tune");
  auto store = MakeMemoryRunStore();
  CountingRunner runner(MakeReplayRunner(KernelReplay("synthetic")));
  LoopOptions o = TuneOptions(dir, "candidates=14");
  o.out = dir / "out";
  Tuner tuner(&runner, store.get(), o);
  int events = 0, bests = 0;
  std::vector<std::string> stages;
  tuner.on_measurement.push_back([&](const NodeEvent& e) {
    ++events;
    bests += e.new_best;
    EXPECT_NE(e.record, nullptr);
  });
  tuner.on_progress = [&](const TaskProgress& p) {
    if (stages.empty() || stages.back() != p.stage) stages.push_back(p.stage);
  };
  LoopResult r = tuner.Run({KernelTask(dir)});

  ASSERT_EQ(r.tasks.size(), 1u);
  const TaskResult& t = r.tasks[0];
  EXPECT_EQ(r.status, RunStatus::kBudgetSpent) << r.note;
  EXPECT_EQ(r.spent.candidates, 14);  // the root and 13 children; the finalists are re-timings
  EXPECT_EQ(runner.total, 14 + 3);
  for (const auto& [hash, n] : runner.counts)
    EXPECT_LE(n, 2) << "measured at most once, plus once as a finalist";
  ASSERT_TRUE(t.best_proposal);
  EXPECT_NE(t.best_proposal->candidate.name.find("THREADS=256"), std::string::npos)
      << t.best_proposal->candidate.name;
  ASSERT_TRUE(t.best);
  EXPECT_NEAR(std::get<Measured>(t.best->outcome).time_ms.median, TimeMs(256, 4), 0.03);
  EXPECT_EQ(t.finalists.size(), 3u);
  EXPECT_EQ(events, 14);
  EXPECT_GE(bests, 2);
  EXPECT_EQ(stages, (std::vector<std::string>{"capturing", "measuring the root", "searching",
                                              "re-timing finalists", "done"}));
  EXPECT_GT(r.gpu_busy_s, 0);

  // The store has the tree, every outcome and the budget after each.
  auto runs = store->ListRuns(0);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run.status, RunStatus::kBudgetSpent);
  EXPECT_EQ(runs[0].run.options["proposer"], "tune");
  auto nodes = store->ListNodes(r.run_id, 0);
  auto outcomes = store->ListOutcomes(r.run_id, 0);
  EXPECT_GE(nodes.size(), outcomes.size());
  EXPECT_EQ(outcomes.size(), 14u);
  EXPECT_EQ(nodes[0].kind, NodeKind::kCuda);
  EXPECT_FALSE(nodes[0].parent);
  for (size_t i = 1; i < nodes.size(); ++i) {
    ASSERT_TRUE(nodes[i].parent);
    EXPECT_LT(*nodes[i].parent, nodes[i].id);
    EXPECT_FALSE(nodes[i].move.empty());
  }
  auto task = store->GetTask(r.run_id, 0);
  ASSERT_TRUE(task && task->best_node);
  EXPECT_EQ(*task->best_node, t.best_node);
  // The best candidate was written as it was found.
  EXPECT_TRUE(fs::exists(dir / "out/synthetic/best.cu"));
  Json best = ReadJsonFile(dir / "out/synthetic/best.json");
  EXPECT_EQ(best["node"], t.best_node);
  EXPECT_GT(best["speedup_vs_eager"].get<double>(), 1.9);
}

TEST(Loop, AFailingRootEndsTheTaskWithItsReason) {
  fs::path dir = testing::ScratchDir("loop-bad-root");
  ReplayData d = KernelReplay("synthetic");
  d.records[ContentHash({kKernel})].outcome =
      Incorrect{{"output 0 has 12 element(s) the candidate never wrote"}};
  auto runner = MakeReplayRunner(d);
  auto store = MakeMemoryRunStore();
  Tuner tuner(runner.get(), store.get(), TuneOptions(dir, "20"));
  LoopResult r = tuner.Run({KernelTask(dir)});
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_EQ(r.tasks[0].status, TaskStatus::kFailed);
  EXPECT_NE(r.tasks[0].error.find("cannot be searched from: incorrect: output 0 has 12 element(s)"),
            std::string::npos)
      << r.tasks[0].error;
}

TEST(Loop, ASweepOfTheReplayProposerRanksAFolder) {
  fs::path dir = testing::ScratchDir("loop-sweep");
  fs::create_directories(dir / "attempts");
  ReplayData d;
  d.device.name = "recorded";
  d.bundles["relu"] = Bundle("relu");
  d.rejudge = false;
  for (int i = 0; i < 4; ++i) {
    std::string src =
        fmt::format("// attempt {}\nextern \"C\" int kopt_forward() {{ return 0; }}\n", i);
    WriteTextFileAtomic(dir / fmt::format("attempts/a{}.cu", i), src);
    EvalRecord r;
    r.source_hash = ContentHash({src});
    if (i == 2)
      r.outcome = BuildFailed{"a2.cu(1): error: expected a ;"};
    else
      r.outcome = MeasuredAt(0.4 + 0.1 * i, 1.0);
    d.records[r.source_hash] = r;
  }
  CountingRunner runner(MakeReplayRunner(d));
  auto store = MakeMemoryRunStore();
  LoopOptions o;
  o.proposer = "replay";
  o.proposer_options.replay_paths = {dir / "attempts"};
  o.search = "sweep";
  o.finalists = 0;
  o.scratch = dir / "scratch";
  Tuner tuner(&runner, store.get(), o);
  LoopTask t;
  t.task.path = dir / "relu.py";
  t.task.name = "relu";
  LoopResult r = tuner.Run({t});
  EXPECT_EQ(r.status, RunStatus::kFinished) << r.note;
  EXPECT_EQ(runner.total, 4);  // the root is the clean eager time, not measured again
  const TaskResult& res = r.tasks[0];
  EXPECT_EQ(res.measured, 3);
  EXPECT_EQ(res.failed, 1);
  ASSERT_TRUE(res.best_proposal);
  EXPECT_EQ(res.best_proposal->candidate.name, "a0.cu");
  auto nodes = store->ListNodes(r.run_id, 0);
  ASSERT_EQ(nodes.size(), 5u);
  EXPECT_EQ(nodes[0].kind, NodeKind::kReference);
  for (size_t i = 1; i < nodes.size(); ++i) EXPECT_EQ(nodes[i].parent, 0);
}

TEST(Loop, ResumeContinuesWithNothingMeasuredTwice) {
  fs::path dir = testing::ScratchDir("loop-resume");
  fs::remove(dir / "runs.db");
  auto store = MakeSqliteRunStore(dir / "runs.db");
  CountingRunner first(MakeReplayRunner(KernelReplay("synthetic")));
  LoopOptions o = TuneOptions(dir, "candidates=6");
  o.finalists = 0;
  std::string run_id;
  {
    Tuner tuner(&first, store.get(), o);
    LoopResult r = tuner.Run({KernelTask(dir)});
    EXPECT_EQ(r.status, RunStatus::kBudgetSpent);
    EXPECT_EQ(first.total, 6);
    run_id = r.run_id;
  }
  size_t nodes_before = store->ListNodes(run_id, 0).size();
  CountingRunner second(MakeReplayRunner(KernelReplay("synthetic")));
  Tuner tuner(&second, store.get(), o);
  LoopResult r =
      tuner.Resume(run_id.substr(0, 13) /* a prefix works */, ParseBudget("candidates=14"));
  EXPECT_EQ(r.run_id, run_id);
  EXPECT_EQ(r.spent.candidates, 14);
  EXPECT_EQ(second.total, 8);
  for (const auto& [hash, n] : second.counts)
    EXPECT_EQ(first.counts.count(hash), 0u) << "measured twice";
  EXPECT_GT(store->ListNodes(run_id, 0).size(), nodes_before);
  EXPECT_EQ(store->ListOutcomes(run_id, 0).size(), 14u);
  EXPECT_EQ(store->GetRun(run_id)->spent.candidates, 14);
}

// Killed after the run was created but before its task was stored (during
// capture): --resume runs the task under the contract the run started with.
TEST(Loop, ATaskKilledBeforeItWasStoredResumesUnderItsContract) {
  fs::path dir = testing::ScratchDir("loop-resume-contract");
  fs::remove(dir / "runs.db");
  auto store = MakeSqliteRunStore(dir / "runs.db");
  LoopOptions o = TuneOptions(dir, "candidates=3");
  o.finalists = 0;
  LoopTask task = KernelTask(dir);
  WriteTextFileAtomic(task.from->path, task.from->source);  // --from's file: no node holds it yet
  task.contract.second_shape["batch_size"] = 8193;
  task.contract.precision = Precision::kTf32;
  std::string run_id;
  {
    // A runner whose capture never answers stands for the process killed there.
    class NoCapture : public Runner {
     public:
      TaskBundle Bundle(const Task&, bool, bool) override { throw Error("killed during capture"); }
      EvalRecord Evaluate(const Task&, const TaskBundle&, const Candidate&,
                          const EvalOptions&) override {
        throw Error("unreachable");
      }
      const DeviceInfo& Device() override { return device_; }
      const Ceilings& DeviceCeilings() override { return ceilings_; }

     private:
      DeviceInfo device_;
      Ceilings ceilings_;
    } none;
    Tuner tuner(&none, store.get(), o);
    LoopResult r = tuner.Run({task});
    run_id = r.run_id;
  }
  // The run names its tasks with their contracts before any is captured. A
  // run with those options and no task stored is what a kill during capture
  // leaves behind.
  RunRecord failed = *store->GetRun(run_id);
  ASSERT_TRUE(failed.options["tasks"][0].contains("contract")) << failed.options.dump();
  NewRun killed;
  killed.options = failed.options;
  killed.device = failed.device;
  killed.kopt_version = failed.kopt_version;
  run_id = store->CreateRun(killed).id;
  ASSERT_TRUE(store->ListTasks(run_id).empty());
  CountingRunner second(MakeReplayRunner(KernelReplay("synthetic")));
  Tuner tuner(&second, store.get(), o);
  LoopResult r = tuner.Resume(run_id);
  ASSERT_EQ(store->ListTasks(run_id).size(), 1u);
  Contract c = store->ListTasks(run_id)[0].contract;
  EXPECT_EQ(c.second_shape.at("batch_size"), 8193);
  EXPECT_EQ(c.precision, Precision::kTf32);
  EXPECT_EQ(r.spent.candidates, 3) << r.tasks.at(0).error;
}

TEST(Loop, KilledAtRandomPointsTheRunResumesToCompletion) {
  fs::path dir = testing::ScratchDir("loop-kill");
  std::mt19937 rng(5);
  for (int round = 0; round < 4; ++round) {
    fs::remove_all(dir / "round");
    fs::create_directories(dir / "round");
    fs::path db = dir / "round/runs.db", log = dir / "round/evaluations.log";
    LoopOptions o = TuneOptions(dir, "candidates=16");
    o.finalists = 0;
    pid_t pid = fork();
    if (pid == 0) {
      auto store = MakeSqliteRunStore(db);
      CountingRunner runner(MakeReplayRunner(KernelReplay("synthetic")), 30, log);
      Tuner tuner(&runner, store.get(), o);
      tuner.Run({KernelTask(dir)});
      _exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(60 + rng() % 300));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    auto store = MakeSqliteRunStore(db);
    auto runs = store->ListRuns(0);
    if (runs.empty()) continue;  // killed before the run was created
    std::string run_id = runs[0].run.id;
    std::set<int> before;
    for (const auto& oc : store->ListOutcomes(run_id, 0)) before.insert(oc.node);
    CountingRunner runner(MakeReplayRunner(KernelReplay("synthetic")));
    Tuner tuner(&runner, store.get(), o);
    LoopResult r = tuner.Resume(run_id);
    EXPECT_EQ(r.status, RunStatus::kBudgetSpent) << r.note;
    EXPECT_EQ(r.spent.candidates, 16) << "round " << round;
    auto outcomes = store->ListOutcomes(run_id, 0);
    EXPECT_EQ(outcomes.size(), 16u);
    // Nothing that had an outcome before the kill was measured again.
    std::map<std::string, int> hash_of_recorded;
    std::map<int, std::string> hashes;
    for (const auto& n : store->ListNodes(run_id, 0)) hashes[n.id] = n.source_hash;
    for (int node : before)
      EXPECT_EQ(runner.counts.count(hashes[node]), 0u) << "node " << node << " measured twice";
  }
}

TEST(Loop, OptionsRoundTripForResume) {
  LoopOptions o;
  o.proposer = "replay";
  o.proposer_options.replay_paths = {"/a", "/b"};
  o.search = "beam";
  o.seed = 9;
  o.objective = Objective::kEnergyAtSpeed;
  o.budget = ParseBudget("wall=10m,candidates=40");
  o.eval.seeds = {1, 2};
  o.eval.timing["max_seconds"] = 0.3;
  LoopOptions back = LoopOptionsFromJson(ToJson(o));
  EXPECT_EQ(back.proposer, "replay");
  EXPECT_EQ(back.proposer_options.replay_paths.size(), 2u);
  EXPECT_EQ(back.search, "beam");
  EXPECT_EQ(back.seed, 9u);
  EXPECT_EQ(back.objective, Objective::kEnergyAtSpeed);
  EXPECT_EQ(back.budget.candidates, 40);
  EXPECT_EQ(back.eval.seeds, (std::vector<int>{1, 2}));
  EXPECT_DOUBLE_EQ(back.eval.timing["max_seconds"].get<double>(), 0.3);
  EXPECT_EQ(back.profile, ProfileMode::kAuto);
  o.profile = ProfileMode::kBest;
  o.profile_limit = 5;
  back = LoopOptionsFromJson(ToJson(o));
  EXPECT_EQ(back.profile, ProfileMode::kBest);
  EXPECT_EQ(back.profile_limit, 5);
  // --no-shipped holds for the whole run, resumed parts included.
  EXPECT_TRUE(back.proposer_options.shipped_solutions);
  o.proposer_options.shipped_solutions = false;
  back = LoopOptionsFromJson(ToJson(o));
  EXPECT_FALSE(back.proposer_options.shipped_solutions);
  // The model's settings come back for --resume; its key is never stored.
  o.proposer = "llm";
  o.proposer_options.llm.model = "openai:some-model";
  o.proposer_options.llm.base_url = "http://127.0.0.1:8000/v1";
  o.proposer_options.llm.api_key = "sk-never-stored";
  o.proposer_options.repair_cap = 3;
  const Json stored = ToJson(o);
  EXPECT_EQ(stored.dump().find("sk-never-stored"), std::string::npos) << stored.dump();
  back = LoopOptionsFromJson(stored);
  EXPECT_EQ(back.proposer_options.llm.model, "openai:some-model");
  EXPECT_EQ(back.proposer_options.llm.base_url, "http://127.0.0.1:8000/v1");
  EXPECT_TRUE(back.proposer_options.llm.api_key.empty());
  EXPECT_EQ(back.proposer_options.repair_cap, 3);
}

// The profile stage's seam: answers with one finding naming the node, or
// fails as told.
class FakeProfiler : public NodeProfiler {
 public:
  NodeProfile Profile(const Task&, const TaskBundle&, const Candidate& c,
                      const EvalRecord& rec) override {
    names.push_back(c.name);
    EXPECT_TRUE(std::holds_alternative<Measured>(rec.outcome)) << c.name;
    NodeProfile p;
    p.gpu_s = 2.0;
    if (!fail_with.empty()) {
      p.error = fail_with;
      return p;
    }
    p.ok = true;
    p.profile = {{"tiers", {"ncu tier 1"}}};
    Diagnosis d;
    d.tool = "memory_coalescing";
    d.severity = "warning";
    d.estimated_gain = 0.3;
    d.advice = "advice for " + c.name;
    p.diagnoses = {d};
    return p;
  }
  std::vector<std::string> names;
  std::string fail_with;
};

// The tuner, reading diagnoses: records what each parent came with.
class ReadingProposer : public Proposer {
 public:
  explicit ReadingProposer(std::vector<std::pair<std::string, std::string>>* seen)
      : inner_(MakeProposer("tune", {})), seen_(seen) {}
  std::string Name() const override { return "reading"; }
  void Begin(const ProposeContext& c) override { inner_->Begin(c); }
  std::optional<Proposal> Root() override { return inner_->Root(); }
  std::vector<Proposal> Propose(const ParentView& p, int n) override {
    for (const auto& d : p.diagnoses)
      seen_->push_back({p.candidate ? p.candidate->name : "", d.advice});
    return inner_->Propose(p, n);
  }
  bool WantsDiagnoses() const override { return true; }

 private:
  std::unique_ptr<Proposer> inner_;
  std::vector<std::pair<std::string, std::string>>* seen_;
};

// Never worse than the reference: when no candidate beats eager, the task
// says the reference is kept (kopt export then writes it).
TEST(Loop, AWinnerSlowerThanEagerKeepsTheReference) {
  fs::path dir = testing::ScratchDir("loop-keep-reference");
  ReplayData d = KernelReplay("synthetic");
  d.bundles["synthetic"].eager_ms = Summarize({0.45, 0.45, 0.45});  // faster than every config
  for (auto& [hash, rec] : d.records)
    if (auto* m = std::get_if<Measured>(&rec.outcome)) m->eager_ms = Summarize({0.45, 0.45, 0.45});
  auto runner = MakeReplayRunner(d);
  auto store = MakeMemoryRunStore();
  Tuner tuner(runner.get(), store.get(), TuneOptions(dir, "candidates=6"));
  LoopResult r = tuner.Run({KernelTask(dir)});
  const TaskResult& t = r.tasks[0];
  ASSERT_TRUE(t.best);
  EXPECT_TRUE(t.reference_kept);
  bool said = false;
  for (const auto& n : t.notes)
    said |= n.find("nothing verified beat eager PyTorch: the best, ") != std::string::npos &&
            n.find("the reference is kept") != std::string::npos;
  EXPECT_TRUE(said);
  // A winner that beats eager stands.
  fs::path dir2 = testing::ScratchDir("loop-keep-winner");
  auto runner2 = MakeReplayRunner(KernelReplay("synthetic"));
  Tuner tuner2(runner2.get(), store.get(), TuneOptions(dir2, "candidates=6"));
  EXPECT_FALSE(tuner2.Run({KernelTask(dir2)}).tasks[0].reference_kept);
}

// A runner whose capture takes a while (a fixed cost of every task).
class SlowCaptureRunner : public CountingRunner {
 public:
  SlowCaptureRunner(std::unique_ptr<Runner> inner, int capture_ms, int eval_ms)
      : CountingRunner(std::move(inner), eval_ms), capture_ms_(capture_ms) {}
  TaskBundle Bundle(const Task& t, bool b, bool c) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(capture_ms_));
    return CountingRunner::Bundle(t, b, c);
  }

 private:
  int capture_ms_;
};

std::vector<LoopTask> KernelTasks(const fs::path& dir, int n, ReplayData* d) {
  std::vector<LoopTask> tasks;
  for (int i = 0; i < n; ++i) {
    LoopTask t = KernelTask(dir);
    t.task.name = fmt::format("t{}", i);
    t.task.path = dir / (t.task.name + ".py");
    WriteTextFileAtomic(t.task.path, "# a task recorded elsewhere\n");
    d->bundles[t.task.name] = Bundle(t.task.name);
    tasks.push_back(t);
  }
  return tasks;
}

// On the H200 a 10-minute run of the 51-task suite spent its budget by the
// 32nd task: each share left out the captures still to come. Now the shares
// set them aside, and every task's search measures a candidate whatever is
// left of the run's time.
TEST(Loop, AManyTaskRunSetsTheLaterTasksCapturesAsideAndTriesEveryTask) {
  fs::path dir = testing::ScratchDir("loop-many-tasks");
  ReplayData d = KernelReplay("synthetic");
  std::vector<LoopTask> tasks = KernelTasks(dir, 5, &d);
  auto store = MakeMemoryRunStore();
  // Captures of 0.5 s each in a 4 s run: shares that ignored them gave the
  // first task 0.7 s of search and the last none.
  SlowCaptureRunner runner(MakeReplayRunner(d), 500, 30);
  LoopOptions o = TuneOptions(dir, "wall=4s");
  o.finalists = 0;
  Tuner tuner(&runner, store.get(), o);
  LoopResult r = tuner.Run(tasks);
  ASSERT_EQ(r.tasks.size(), 5u);
  std::vector<int> measured;
  for (const auto& t : r.tasks) measured.push_back(t.measured);
  for (int m : measured) EXPECT_GE(m, 3) << fmt::format("{}", fmt::join(measured, ", "));
  EXPECT_GE(measured.back() * 2, measured.front()) << fmt::format("{}", fmt::join(measured, ", "));
  EXPECT_LT(r.wall_s, 6.0);

  // A run whose time is gone still measures each task's first candidate
  // (the root and one child here)...
  fs::path dir2 = testing::ScratchDir("loop-many-tasks-spent");
  ReplayData d2 = KernelReplay("synthetic");
  std::vector<LoopTask> tasks2 = KernelTasks(dir2, 3, &d2);
  SlowCaptureRunner runner2(MakeReplayRunner(d2), 300, 10);
  LoopOptions o2 = TuneOptions(dir2, "wall=0.2s");
  o2.finalists = 0;
  Tuner tuner2(&runner2, store.get(), o2);
  LoopResult r2 = tuner2.Run(tasks2);
  EXPECT_EQ(r2.status, RunStatus::kBudgetSpent);
  for (const auto& t : r2.tasks) EXPECT_EQ(t.measured + t.failed, 2) << t.name;
  // A run whose fixed costs still to come exceed what is left (five captures
  // of 0.5 s in 1.5 s) gives each task its first candidate, the first task
  // too: its share is nothing, not unlimited.
  fs::path dir4 = testing::ScratchDir("loop-many-tasks-reserve");
  ReplayData d4 = KernelReplay("synthetic");
  std::vector<LoopTask> tasks4 = KernelTasks(dir4, 5, &d4);
  SlowCaptureRunner runner4(MakeReplayRunner(d4), 500, 30);
  LoopOptions o4 = TuneOptions(dir4, "wall=1.5s");
  o4.finalists = 0;
  Tuner tuner4(&runner4, store.get(), o4);
  LoopResult r4 = tuner4.Run(tasks4);
  ASSERT_EQ(r4.tasks.size(), 5u);
  for (const auto& t : r4.tasks) EXPECT_EQ(t.measured + t.failed, 2) << t.name;
  // ...but never beyond a counted limit: once 4 candidates are spent, the
  // last task's search measures nothing after its starting point.
  fs::path dir3 = testing::ScratchDir("loop-many-tasks-counted");
  ReplayData d3 = KernelReplay("synthetic");
  std::vector<LoopTask> tasks3 = KernelTasks(dir3, 3, &d3);
  SlowCaptureRunner runner3(MakeReplayRunner(d3), 0, 0);
  LoopOptions o3 = TuneOptions(dir3, "candidates=4");
  o3.finalists = 0;
  Tuner tuner3(&runner3, store.get(), o3);
  LoopResult r3 = tuner3.Run(tasks3);
  ASSERT_EQ(r3.tasks.size(), 3u);
  EXPECT_EQ(r3.tasks[0].measured + r3.tasks[1].measured, 4);
  EXPECT_EQ(r3.tasks[2].measured, 1);
}

TEST(Loop, ATaskWhoseCaptureSpentTheRunStillGetsItsPlansFirstCandidate) {
  // The LSTM task as an H200 captured it, with the expert proposer: its
  // plan is the reference replayed from a CUDA graph. A capture slower than
  // the whole run (the LSTM's took minutes) still leaves the task its first
  // candidate (in the s13 and s19 suite runs it ended with none measured).
  fs::path dir = testing::ScratchDir("loop-capture-spent");
  ReplayData d;
  d.device.name = "NVIDIA H200 (recorded)";
  d.device.available = true;
  d.rejudge = false;
  LoopTask t;
  t.task.path = testing::SourceDir() / "tasks" / "level3" / "04_lstm.py";
  t.task.name = "04_lstm";
  TaskBundle b;
  b.task_name = t.task.name;
  b.task_hash = ContentHash({t.task.name});
  b.outputs.push_back(TensorSpec{"out0", "output", "float32", {64, 256, 512}, {}});
  b.graph =
      ReadJsonFile(testing::SourceDir() / "tests" / "data" / "graphs" / "level3_04_lstm.json");
  b.eager_ms = Summarize({10.2, 10.25, 10.3});
  b.floor_ms = 0.5;
  b.kernels = {{"gemm", 528, 2.85}, {"cell", 512, 1.2}, {"copy", 8, 0.02}};
  d.bundles[t.task.name] = b;
  SlowCaptureRunner runner(MakeReplayRunner(d), 600, 10);
  auto store = MakeMemoryRunStore();
  LoopOptions o;
  o.proposer = "expert";
  o.proposer_options.kernels_dir = testing::SourceDir() / "kernels";
  o.proposer_options.moves_file = testing::SourceDir() / "data" / "expert" / "moves.json";
  o.proposer_options.shipped_solutions = false;
  o.search = "mcts";
  o.budget = ParseBudget("wall=0.3s");
  o.finalists = 0;
  o.scratch = dir / "scratch";
  Tuner tuner(&runner, store.get(), o);
  LoopResult r = tuner.Run({t});
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_EQ(r.tasks[0].measured + r.tasks[0].failed, 1)
      << fmt::format("{}", fmt::join(r.tasks[0].notes, "\n"));
  EXPECT_EQ(runner.total, 1);
}

TEST(LoopProfile, TheWinnerIsProfiledOnceAndItsDiagnosesStored) {
  fs::path dir = testing::ScratchDir("loop-profile-winner");
  auto store = MakeMemoryRunStore();
  auto runner = MakeReplayRunner(KernelReplay("synthetic"));
  LoopOptions o = TuneOptions(dir, "candidates=10");
  o.profile = ProfileMode::kAuto;  // the tuner reads no diagnoses: the winner only
  FakeProfiler profiler;
  Tuner tuner(runner.get(), store.get(), o);
  tuner.SetProfiler(&profiler);
  std::vector<std::string> stages;
  tuner.on_progress = [&](const TaskProgress& p) {
    if (stages.empty() || stages.back() != p.stage) stages.push_back(p.stage);
  };
  LoopResult r = tuner.Run({KernelTask(dir)});
  const TaskResult& t = r.tasks[0];
  ASSERT_TRUE(t.best_proposal);
  ASSERT_EQ(profiler.names, (std::vector<std::string>{t.best_proposal->candidate.name}));
  EXPECT_EQ(t.profiled, 1);
  ASSERT_EQ(t.best_diagnoses.size(), 1u);
  EXPECT_EQ(t.best_diagnoses[0].advice, "advice for " + t.best_proposal->candidate.name);
  auto profiles = store->ListProfiles(r.run_id, 0);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].node, t.best_node);
  EXPECT_EQ(profiles[0].diagnoses.size(), 1u);
  EXPECT_EQ(profiles[0].profile["tiers"][0], "ncu tier 1");
  // Its GPU time is spent from the budget, and the stage is shown.
  EXPECT_GE(r.spent.gpu_s, 2.0 + 10 * 0.5);
  EXPECT_NE(std::find(stages.begin(), stages.end(), "profiling"), stages.end());
}

TEST(LoopProfile, AProposerThatReadsDiagnosesGetsEachNewBestProfiled) {
  fs::path dir = testing::ScratchDir("loop-profile-best");
  auto store = MakeMemoryRunStore();
  auto runner = MakeReplayRunner(KernelReplay("synthetic"));
  LoopOptions o = TuneOptions(dir, "candidates=16");
  o.profile_limit = 2;
  FakeProfiler profiler;
  std::vector<std::pair<std::string, std::string>> seen;
  Tuner tuner(runner.get(), store.get(), o);
  tuner.SetProfiler(&profiler);
  tuner.make_proposer = [&] { return std::make_unique<ReadingProposer>(&seen); };
  LoopResult r = tuner.Run({KernelTask(dir)});
  const TaskResult& t = r.tasks[0];
  // The root (the first best) and the next new best during the search, then
  // the winner when it is neither.
  ASSERT_GE(profiler.names.size(), 2u);
  ASSERT_LE(profiler.names.size(), 3u);
  EXPECT_EQ(profiler.names[0], store->ListNodes(r.run_id, 0)[0].name);  // the root
  EXPECT_EQ(t.profiled, static_cast<int>(profiler.names.size()));
  EXPECT_EQ(store->ListProfiles(r.run_id, 0).size(), profiler.names.size());
  // Children of a profiled parent were proposed with its diagnoses.
  ASSERT_FALSE(seen.empty());
  for (const auto& [parent, advice] : seen) EXPECT_EQ(advice, "advice for " + parent);
  std::set<std::string> unique(profiler.names.begin(), profiler.names.end());
  EXPECT_EQ(unique.size(), profiler.names.size()) << "a node is profiled at most once";
}

TEST(LoopProfile, AProfilerThatCannotRunIsAskedOnceAndTheRunGoesOn) {
  fs::path dir = testing::ScratchDir("loop-profile-broken");
  auto store = MakeMemoryRunStore();
  auto runner = MakeReplayRunner(KernelReplay("synthetic"));
  LoopOptions o = TuneOptions(dir, "candidates=10");
  o.profile = ProfileMode::kBest;
  FakeProfiler profiler;
  profiler.fail_with = "Nsight Compute (ncu) was not found; install it or set KOPT_NCU to its path";
  std::vector<std::string> log;
  Tuner tuner(runner.get(), store.get(), o);
  tuner.SetProfiler(&profiler);
  tuner.on_log = [&](const std::string& line) { log.push_back(line); };
  LoopResult r = tuner.Run({KernelTask(dir)});
  EXPECT_EQ(r.status, RunStatus::kBudgetSpent) << r.note;
  EXPECT_EQ(profiler.names.size(), 1u);
  EXPECT_TRUE(store->ListProfiles(r.run_id, 0).empty());
  EXPECT_EQ(r.tasks[0].profiled, 0);
  bool said = false;
  for (const auto& l : log)
    said |= l.find("was not profiled: Nsight Compute (ncu) was not found") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(LoopProfile, NoneProfilesNothing) {
  fs::path dir = testing::ScratchDir("loop-profile-none");
  auto store = MakeMemoryRunStore();
  auto runner = MakeReplayRunner(KernelReplay("synthetic"));
  LoopOptions o = TuneOptions(dir, "candidates=6");
  o.profile = ProfileMode::kNone;
  FakeProfiler profiler;
  Tuner tuner(runner.get(), store.get(), o);
  tuner.SetProfiler(&profiler);
  tuner.Run({KernelTask(dir)});
  EXPECT_TRUE(profiler.names.empty());
}

TEST(Objective, WinnersByTimeEnergyAndEnergyAtSpeed) {
  Measured a = MeasuredAt(1.00, 2), b = MeasuredAt(1.02, 2), c = MeasuredAt(1.5, 2);
  a.energy_mj_per_call = 10;
  b.energy_mj_per_call = 8;
  c.energy_mj_per_call = 5;
  std::vector<const Measured*> all = {&a, &b, &c};
  EXPECT_EQ(PickWinner(all, Objective::kTime, 0.03), 0);
  EXPECT_EQ(PickWinner(all, Objective::kEnergy, 0.03), 2);
  EXPECT_EQ(PickWinner(all, Objective::kEnergyAtSpeed, 0.03), 1);  // within 3% of the best time
  EXPECT_EQ(PickWinner({}, Objective::kTime, 0.03), -1);
  EXPECT_THROW(ParseObjective("speed"), Error);
  EXPECT_EQ(ParseObjective("energy-at-speed"), Objective::kEnergyAtSpeed);
}

TEST(Objective, SearchTimeIsCorrectedForTheWorkersDriftWithinABound) {
  // No clean eager: the time as measured.
  Measured m = MeasuredAt(0.28, 0.28);
  EXPECT_DOUBLE_EQ(*SearchValue(m, Objective::kTime), 0.28);
  // The worker ran slow (eager beside it 11% above the clean process's):
  // the candidate's time is scaled back by the same factor.
  m.clean_eager_ms = Summarize({0.2533, 0.2533, 0.2533});
  m.eager_ms = Summarize({0.2811, 0.2811, 0.2811});
  EXPECT_NEAR(*SearchValue(m, Objective::kTime), 0.28 * 0.2533 / 0.2811, 1e-12);
  EXPECT_NEAR(*SearchValue(m, Objective::kEnergyAtSpeed), 0.28 * 0.2533 / 0.2811, 1e-12);
  // A candidate that slows the reference beside it 3x gains at most the bound.
  m.eager_ms = Summarize({0.76, 0.76, 0.76});
  EXPECT_NEAR(*SearchValue(m, Objective::kTime), 0.28 / kMaxDriftCorrection, 1e-12);
  // A fast worker corrects the other way, within the same bound.
  m.eager_ms = Summarize({0.1, 0.1, 0.1});
  EXPECT_NEAR(*SearchValue(m, Objective::kTime), 0.28 * kMaxDriftCorrection, 1e-12);
  // Energy is not corrected; the winner among finalists is by raw time.
  m.energy_mj_per_call = 3;
  EXPECT_DOUBLE_EQ(*SearchValue(m, Objective::kEnergy), 3);
  Measured slow_state = MeasuredAt(0.26, 0.28), fast_state = MeasuredAt(0.255, 0.2533);
  slow_state.clean_eager_ms = fast_state.clean_eager_ms = Summarize({0.2533, 0.2533, 0.2533});
  EXPECT_LT(*SearchValue(slow_state, Objective::kTime), *SearchValue(fast_state, Objective::kTime));
  EXPECT_EQ(PickWinner({&slow_state, &fast_state}, Objective::kTime, 0.03), 1);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

// The auto profile mode: a candidate near its floor is not profiled (the
// profile would only name the roof), nor a new best during the search when
// the task's share cannot pay for the profile twice; a candidate far from its
// floor with time left is.
TEST(AutoProfile, SkipsCandidatesAtTheirRoofAndSearchProfilesTheShareCannotPay) {
  TaskBundle bundle;
  bundle.floor_ms = 0.1;
  Measured near, far;
  near.time_ms.median = 0.11;  // 91% of the floor
  far.time_ms.median = 0.5;    // 20%
  auto at_roof = SkipAutoProfile(near, bundle, /*searching=*/false, 100, 0);
  ASSERT_TRUE(at_roof);
  EXPECT_NE(at_roof->find("at 91% of its floor"), std::string::npos) << *at_roof;
  EXPECT_FALSE(SkipAutoProfile(far, bundle, true, 100, 0));
  // 30 s left, the default 20 s cost: not enough for a search profile; the
  // winner's explanation does not depend on the share.
  auto short_share = SkipAutoProfile(far, bundle, true, 30, 0);
  ASSERT_TRUE(short_share);
  EXPECT_NE(short_share->find("a profile takes about 20 s"), std::string::npos) << *short_share;
  EXPECT_FALSE(SkipAutoProfile(far, bundle, false, 30, 0));
  // The run's measured profile cost replaces the default.
  EXPECT_FALSE(SkipAutoProfile(far, bundle, true, 30, 12));
  // Without a floor, only the share decides.
  bundle.floor_ms = 0;
  EXPECT_FALSE(SkipAutoProfile(near, bundle, true, 100, 0));
}

// On the GPU a suite run stopped at its call's deadline in task 31 was
// resumed and searched tasks 1-30 again: each had spent its share, and each
// paid its finishing work a second time while the tasks after it waited.
TEST(Loop, AResumedRunKeepsTheTasksThatSpentTheirShare) {
  fs::path dir = testing::ScratchDir("loop-resume-shares");
  fs::remove(dir / "runs.db");
  auto store = MakeSqliteRunStore(dir / "runs.db");
  ReplayData d = KernelReplay("synthetic");
  std::vector<LoopTask> tasks = KernelTasks(dir, 3, &d);
  // --from's file: the task not yet begun reads it on resume.
  WriteTextFileAtomic(tasks[0].from->path, tasks[0].from->source);
  LoopOptions o = TuneOptions(dir, "candidates=12");
  o.finalists = 0;
  // Stopped (SIGINT) during the second task.
  class StoppingRunner : public CountingRunner {
   public:
    using CountingRunner::CountingRunner;
    EvalRecord Evaluate(const Task& t, const TaskBundle& b, const Candidate& c,
                        const EvalOptions& opts) override {
      EvalRecord r = CountingRunner::Evaluate(t, b, c, opts);
      if (total == 6 && stop) stop();
      return r;
    }
    std::function<void()> stop;
  } first(MakeReplayRunner(d));
  std::string run_id;
  {
    Tuner tuner(&first, store.get(), o);
    first.stop = [&] { tuner.RequestStop(); };
    LoopResult r = tuner.Run(tasks);
    ASSERT_EQ(r.status, RunStatus::kInterrupted) << r.note;
    ASSERT_EQ(r.tasks.at(0).status, TaskStatus::kBudgetSpent);
    run_id = r.run_id;
  }
  size_t first_task = store->ListOutcomes(run_id, 0).size();
  EXPECT_EQ(first_task, 4u);
  CountingRunner second(MakeReplayRunner(d));
  {
    Tuner tuner(&second, store.get(), o);
    LoopResult r = tuner.Resume(run_id);
    ASSERT_EQ(r.tasks.size(), 3u);
    EXPECT_EQ(r.tasks[0].status, TaskStatus::kBudgetSpent);
    EXPECT_EQ(r.tasks[0].measured + r.tasks[0].failed, static_cast<int>(first_task));
    EXPECT_EQ(store->ListOutcomes(run_id, 0).size(), first_task) << "searched again";
    EXPECT_GT(store->ListOutcomes(run_id, 2).size(), 0u) << r.tasks[2].error;
    EXPECT_EQ(r.spent.candidates, 12);
  }
  // New limits: the tasks search on ("last": the store's newest run).
  CountingRunner third(MakeReplayRunner(d));
  Tuner tuner(&third, store.get(), o);
  EXPECT_EQ(tuner.Resume("last", ParseBudget("candidates=24")).run_id, run_id);
  EXPECT_GT(store->ListOutcomes(run_id, 0).size(), first_task);
}

// A task finished before the stop keeps its finalists' re-timing (what
// names the winner, and what export and the suite's summary read) when the
// run is resumed.
TEST(Loop, AResumedRunReportsTheFinalistsOfItsFinishedTasks) {
  fs::path dir = testing::ScratchDir("loop-resume-finalists");
  fs::remove(dir / "runs.db");
  auto store = MakeSqliteRunStore(dir / "runs.db");
  ReplayData d = KernelReplay("synthetic");
  std::vector<LoopTask> tasks = KernelTasks(dir, 2, &d);
  WriteTextFileAtomic(tasks[0].from->path, tasks[0].from->source);
  LoopOptions o = TuneOptions(dir, "candidates=12");
  o.finalists = 2;
  class StoppingRunner : public CountingRunner {
   public:
    using CountingRunner::CountingRunner;
    EvalRecord Evaluate(const Task& t, const TaskBundle& b, const Candidate& c,
                        const EvalOptions& opts) override {
      EvalRecord r = CountingRunner::Evaluate(t, b, c, opts);
      if (t.name != first_task && stop) stop();
      return r;
    }
    std::string first_task;
    std::function<void()> stop;
  } first(MakeReplayRunner(d));
  first.first_task = tasks[0].task.name;
  Json finalists;
  std::string run_id;
  {
    Tuner tuner(&first, store.get(), o);
    first.stop = [&] { tuner.RequestStop(); };
    LoopResult r = tuner.Run(tasks);
    ASSERT_EQ(r.status, RunStatus::kInterrupted) << r.note;
    finalists = r.tasks.at(0).finalists;
    ASSERT_EQ(finalists.size(), 2u);
    run_id = r.run_id;
  }
  CountingRunner second(MakeReplayRunner(d));
  Tuner tuner(&second, store.get(), o);
  LoopResult r = tuner.Resume(run_id);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].finalists, finalists);
}

// A run measured on one GPU does not go on on another: its baselines, floors
// and the times of the tasks it finished belong to the first card.
TEST(Loop, ARunIsNotResumedOnAnotherDevice) {
  fs::path dir = testing::ScratchDir("loop-resume-device");
  fs::remove(dir / "runs.db");
  auto store = MakeSqliteRunStore(dir / "runs.db");
  LoopOptions o = TuneOptions(dir, "candidates=2");
  o.finalists = 0;
  ReplayData d = KernelReplay("synthetic");
  auto runner = MakeReplayRunner(d);
  std::string run_id = Tuner(runner.get(), store.get(), o).Run({KernelTask(dir)}).run_id;
  d.device.name = "NVIDIA H100 80GB HBM3 (recorded)";
  auto other = MakeReplayRunner(d);
  try {
    Tuner(other.get(), store.get(), o).Resume(run_id, ParseBudget("candidates=4"));
    ADD_FAILURE() << "resumed on another device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NVIDIA H200 (recorded)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("start a new run"), std::string::npos) << e.what();
  }
  EXPECT_EQ(store->ListOutcomes(run_id, 0).size(), 2u);
}

}  // namespace
}  // namespace kopt
