// `kopt optimize` end to end through the binary on the CPU worker: a real
// search (the tuner over a PyTorch candidate's knob), the run store, `kopt
// export RUN`, and kill -9 at random points followed by --resume.
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "store/run_store.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

ProcessResult Kopt(std::vector<std::string> args, double timeout_s = 600) {
  args.insert(args.begin(), KOPT_BINARY);
  ProcessOptions o;
  o.timeout_s = timeout_s;  // at the deadline the process group gets SIGKILL
  o.env["KOPT_CACHE"] = testing::ScratchDir("optimize-cli-cache").string();
  return RunProcess(args, o);
}

std::string PyData(const std::string& f) {
  return (testing::SourceDir() / "python/tests/data" / f).string();
}

std::vector<std::string> OptimizeArgs(const fs::path& store, const std::string& budget) {
  return {"optimize",
          PyData("relu_sized.py"),
          "--proposer",
          "tune",
          "--from",
          PyData("relu_chunked.py"),
          "--device",
          "cpu",
          "--budget",
          budget,
          "--max-seconds",
          "0.05",
          "--finalist-seconds",
          "0.1",
          "--no-compile",
          "--store",
          store.string()};
}

// Without a GPU, the main job says so and shows the expert's plan for the
// task, planned from the op graph recorded on the meta device, with its
// first candidates compiled.
TEST(OptimizeCli, WithoutAGpuItShowsTheExpertsPlanFromTheMetaGraph) {
  if (testing::HaveGpu()) GTEST_SKIP() << "a GPU is visible: kopt optimize would search for real";
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  ProcessResult r =
      Kopt({"optimize", (testing::SourceDir() / "tasks/level1/04_softmax.py").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("No CUDA GPU is visible on this machine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("04_softmax: plan 1: fused row kernel [fused]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("04_softmax[fused]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
}

TEST(OptimizeCli, ATunedRunIsStoredExportedAndResumed) {
  fs::path dir = testing::ScratchDir("optimize-cli");
  fs::path store = dir / "runs.db", json = dir / "result.json";
  std::vector<std::string> args = OptimizeArgs(store, "3");
  args.insert(args.end(), {"--json", json.string(), "--out", (dir / "best").string()});
  ProcessResult r = Kopt(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("relu_chunked[CHUNK="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("candidates verified per GPU-minute"), std::string::npos) << r.out;
  Json j = ReadJsonFile(json);
  EXPECT_EQ(j["status"], "budget_spent");
  EXPECT_EQ(j["spent"]["candidates"], 3);
  std::string run = j["run"];
  EXPECT_TRUE(fs::exists(dir / "best/relu_sized/best.py"));

  // The finalists' re-timing is stored with the task and shown by `kopt show`.
  {
    auto s = MakeSqliteRunStore(store);
    Json finalists = s->GetTask(run, 0)->finalists;
    ASSERT_GE(finalists.size(), 2u) << finalists.dump();
    int winners = 0;
    for (const auto& f : finalists) winners += f.value("winner", false) ? 1 : 0;
    EXPECT_EQ(winners, 1) << finalists.dump();
    EXPECT_EQ(finalists, j["tasks"][0]["finalists"]);
  }
  r = Kopt({"show", run, "--store", store.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("finalists re-timed together in one worker: #"), std::string::npos) << r.out;
  {  // the command line is part of the run
    Json argv = MakeSqliteRunStore(store)->GetRun(run)->options["argv"];
    ASSERT_GE(argv.size(), 3u) << argv.dump();
    EXPECT_EQ(argv[1], "optimize");
    EXPECT_NE(argv.dump().find("--finalist-seconds"), std::string::npos) << argv.dump();
  }

  // --replay RUN with no task says to name them (it would otherwise search the default task).
  r = Kopt({"optimize", "--replay", run, "--store", store.string(), "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("relu_sized.py"), std::string::npos) << r.err;

  // The winner as files to drop in: a ModelNew with its provenance.
  r = Kopt({"export", run, "--store", store.string(), "--out", (dir / "exported").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(dir / "exported/relu_sized/README.md")) << r.out;
  std::string readme = ReadTextFile(dir / "exported/relu_sized/README.md");
  EXPECT_NE(readme.find(run), std::string::npos) << readme;

  // Resume with a larger budget: the search continues where it stopped.
  r = Kopt({"optimize", "--resume", run, "--store", store.string(), "--budget", "5", "--device",
            "cpu", "--max-seconds", "0.2"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("continues with the run's own options; ignored: --max-seconds"),
            std::string::npos)
      << r.err;
  auto s = MakeSqliteRunStore(store);
  EXPECT_EQ(s->GetRun(run)->spent.candidates, 5);
  EXPECT_EQ(s->ListOutcomes(run, 0).size(), 5u);
}

TEST(OptimizeCli, KilledWithSigkillAtRandomPointsItResumesWithNothingMeasuredTwice) {
  fs::path dir = testing::ScratchDir("optimize-cli-kill");
  std::mt19937 rng(11);
  int resumed = 0;
  for (int round = 0; round < 2; ++round) {
    fs::path store = dir / ("runs" + std::to_string(round) + ".db");
    fs::remove(store);
    // Killed (SIGKILL, the whole process group) somewhere between capture
    // and the end of the search.
    double kill_at = 6.0 + (rng() % 60) / 10.0;
    ProcessResult killed = Kopt(OptimizeArgs(store, "6"), kill_at);
    if (!killed.timed_out) continue;  // it finished first: nothing to resume this round
    if (!fs::exists(store)) continue;
    auto s = MakeSqliteRunStore(store);
    auto runs = s->ListRuns(0);
    if (runs.empty()) continue;  // killed before the run began
    std::string run = runs[0].run.id;
    // Killed after the run recorded its end but before the process exited
    // (a loaded machine): nothing to resume.
    if (runs[0].run.status != RunStatus::kRunning) {
      EXPECT_EQ(runs[0].run.status, RunStatus::kBudgetSpent);
      continue;
    }
    std::map<int, std::string> finished_before;
    for (const auto& o : s->ListOutcomes(run, 0)) finished_before[o.node] = o.finished_at;
    s.reset();
    ProcessResult r =
        Kopt({"optimize", "--resume", run, "--store", store.string(), "--device", "cpu"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    ++resumed;
    s = MakeSqliteRunStore(store);
    EXPECT_EQ(s->GetRun(run)->status, RunStatus::kBudgetSpent);
    EXPECT_EQ(s->GetRun(run)->spent.candidates, 6);
    auto outcomes = s->ListOutcomes(run, 0);
    EXPECT_EQ(outcomes.size(), 6u);
    // What finished before the kill is exactly as it was: not measured again.
    for (const auto& o : outcomes)
      if (finished_before.count(o.node))
        EXPECT_EQ(o.finished_at, finished_before[o.node]) << "node " << o.node;
    std::set<std::string> hashes;
    for (const auto& n : s->ListNodes(run, 0)) EXPECT_TRUE(hashes.insert(n.source_hash).second);
  }
  std::printf("resumed %d of 2 killed runs\n", resumed);
}

}  // namespace
}  // namespace kopt
