// `kopt export --task --candidate` end to end: the binary writes the files;
// a mistake is one sentence on stderr and exit status 2.
#include <gtest/gtest.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "store/run_store.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

ProcessResult Kopt(std::vector<std::string> args, const fs::path& cwd = {}) {
  args.insert(args.begin(), KOPT_BINARY);
  ProcessOptions o;
  o.timeout_s = 60;
  o.cwd = cwd;
  o.env["KOPT_ROOT"] = testing::SourceDir().string();
  return RunProcess(args, o);
}

std::string Task(const std::string& rel) { return (testing::SourceDir() / "tasks" / rel).string(); }

TEST(ExportCli, HelpListsExport) {
  ProcessResult r = Kopt({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("export"), std::string::npos) << r.out;
}

TEST(ExportCli, CudaCandidateWithProvenance) {
  fs::path out = testing::ScratchDir("export-cli-cuda") / "relu";
  ProcessResult r =
      Kopt({"export", "--task", Task("level1/01_relu.py"), "--candidate",
            Task("level1/solutions/01_relu.cu"), "--out", out.string(), "--arch", "sm_90a",
            "--provenance", R"({"run": "r1", "speedup_vs_eager": 3.2, "device": "NVIDIA H200"})"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* f : {"01_relu.cu", "kopt/abi.h", "01_relu_modelnew.py", "README.md"}) {
    EXPECT_TRUE(fs::is_regular_file(out / f)) << f;
    EXPECT_NE(r.out.find("wrote " + (out / f).string() + "\n"), std::string::npos) << r.out;
  }
  EXPECT_EQ(ReadTextFile(out / "01_relu.cu"), ReadTextFile(Task("level1/solutions/01_relu.cu")));
  std::string py = ReadTextFile(out / "01_relu_modelnew.py");
  EXPECT_NE(py.find(ReadTextFile(Task("level1/01_relu.py"))), std::string::npos);
  EXPECT_NE(py.find("'-gencode=arch=compute_90a,code=sm_90a'"), std::string::npos);
  std::string readme = ReadTextFile(out / "README.md");
  EXPECT_NE(readme.find("- speedup_vs_eager: 3.2x"), std::string::npos) << readme;
  EXPECT_NE(readme.find("- device: NVIDIA H200"), std::string::npos) << readme;
  EXPECT_EQ(r.out.find("not verified"), std::string::npos) << r.out;
}

TEST(ExportCli, HybridImportingKoptAndTheDefaultFolder) {
  fs::path dir = testing::ScratchDir("export-cli-hybrid");
  ProcessResult r = Kopt({"export", "--task", Task("level2/01_linear_gelu_scale.py"), "--candidate",
                          Task("level2/solutions/01_linear_gelu_scale.py")},
                         dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  fs::path py = dir / "kopt-export/01_linear_gelu_scale/01_linear_gelu_scale_modelnew.py";
  ASSERT_TRUE(fs::is_regular_file(py)) << r.out;
  EXPECT_FALSE(fs::exists(dir / "kopt-export/01_linear_gelu_scale/kopt"));
  EXPECT_NE(ReadTextFile(py).find("kopt = _kopt_runtime  # kopt export: was `import kopt`"),
            std::string::npos);
  EXPECT_NE(r.out.find("embedded loader"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not verified by this command"), std::string::npos) << r.out;
}

// Never worse than the reference: a run whose winner, re-timed among the
// finalists, did not beat eager exports the task's own Model, which
// KernelBench's procedure accepts.
TEST(ExportCli, ARunWhoseWinnerLostToEagerExportsTheReference) {
  fs::path dir = testing::ScratchDir("export-cli-reference");
  fs::path db = dir / "runs.db";
  std::string run_id;
  {
    auto store = MakeSqliteRunStore(db);
    NewRun nr;
    nr.device = Json{{"name", "NVIDIA H200"}};
    run_id = store->CreateRun(nr).id;
    TaskRecord t;
    t.run_id = run_id;
    t.name = "01_relu";
    t.path = Task("level1/01_relu.py");
    t.task_hash = "h";
    t.bundle.eager_ms = Summarize({0.253, 0.253, 0.253});
    t.status = TaskStatus::kRunning;
    store->AddTask(t);
    NodeRecord n;
    n.run_id = run_id;
    n.id = 0;
    n.kind = NodeKind::kCuda;
    n.name = "01_relu[THREADS=512,ILP=4]";
    n.source = ReadTextFile(Task("level1/solutions/01_relu.cu"));
    n.source_hash = "s";
    store->AddNode(n);
    Measured m;
    m.time_ms = Summarize({0.26, 0.26, 0.26});
    m.eager_ms = Summarize({0.255, 0.255, 0.255});
    OutcomeRecord o = MakeOutcomeRecord(run_id, 0, 0, m);
    store->RecordOutcome(o, BudgetSpent{});
    store->SetTaskBest(run_id, 0, 0);
    store->SetTaskFinalists(run_id, 0,
                            Json::array({{{"node", 0},
                                          {"name", n.name},
                                          {"time_ms", 0.2602},
                                          {"winner", true},
                                          {"speedup_vs_eager", 0.97}}}));
    store->SetTaskStatus(run_id, 0, TaskStatus::kFinished);
  }
  fs::path out = dir / "out";
  ProcessResult r = Kopt({"export", run_id, "--store", db.string(), "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(
      r.out.find("01_relu: nothing kopt verified beat eager PyTorch (the best, "
                 "01_relu[THREADS=512,ILP=4], ran at 0.97x); exporting the reference unchanged"),
      std::string::npos)
      << r.out;
  fs::path py = out / "01_relu/01_relu_reference_modelnew.py";
  ASSERT_TRUE(fs::is_regular_file(py)) << r.out;
  EXPECT_FALSE(fs::exists(out / "01_relu/01_relu_best.cu"));
  std::string text = ReadTextFile(py);
  EXPECT_NE(text.find(ReadTextFile(Task("level1/01_relu.py"))), std::string::npos);
  EXPECT_NE(text.find("class ModelNew(Model):"), std::string::npos);
  EXPECT_NE(ReadTextFile(out / "01_relu/README.md").find("nothing kopt verified beat eager"),
            std::string::npos);
  // KernelBench's procedure on the CPU, where an interpreter with torch is.
  const char* env = std::getenv("KOPT_PYTHON");
  std::string python = env && *env ? env : "/usr/bin/python3";
  ProcessOptions po;
  po.timeout_s = 120;
  if (RunProcess({python, "-c", "import torch"}, po).exit_code != 0)
    GTEST_SKIP() << "no python with torch for KernelBench's procedure";
  ProcessResult kb =
      RunProcess({python, (testing::SourceDir() / "python/tests/kernelbench_eval.py").string(),
                  Task("level1/01_relu.py"), py.string(), "--device", "cpu", "--trials", "2",
                  "--perf-trials", "2"},
                 po);
  ASSERT_EQ(kb.exit_code, 0) << kb.out << kb.err;
  Json v = Json::parse(
      kb.out.substr(kb.out.rfind("\n{") == std::string::npos ? 0 : kb.out.rfind("\n{") + 1));
  EXPECT_TRUE(v.value("correct", false)) << kb.out;
  EXPECT_TRUE(v.value("params_match", false)) << kb.out;
}

TEST(ExportCli, MistakesAreOneSentenceAndStatus2) {
  fs::path dir = testing::ScratchDir("export-cli-errors");
  WriteTextFileAtomic(dir / "sub.py",
                      "import kopt.tasks\nimport torch\n\n\nclass ModelNew(torch.nn.Module):\n"
                      "    pass\n");
  const std::string relu = Task("level1/01_relu.py"), cu = Task("level1/solutions/01_relu.cu");
  const std::string out = (dir / "out").string();
  for (const auto& [args, words] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"export", "--task", "/no/such/task.py", "--candidate", cu}, "does not exist"},
           {{"export", "--task", relu, "--candidate", relu}, "defines no `class ModelNew`"},
           {{"export", "--task", relu, "--candidate", (dir / "sub.py").string(), "--out", out},
            "imports kopt.tasks"},
           {{"export", "--task", relu, "--candidate", cu, "--arch", "volta", "--out", out},
            "not an SM architecture"},
           {{"export", "--task", relu, "--candidate", cu, "--provenance", "[1, 2]", "--out", out},
            "must be a JSON object"},
           {{"export", "--task", relu, "--candidate", cu, "--provenance", "{bad", "--out", out},
            "neither a file nor valid JSON"},
           {{"export", "--task", relu}, "needs --task TASK.py and --candidate FILE"},
           {{"export", relu, "--candidate", cu}, "takes the task as an option"},
           {{"export", "r1", "--store", (dir / "no-such-store.db").string()},
            "there is no run store at"},
       }) {
    ProcessResult r = Kopt(args);
    EXPECT_EQ(r.exit_code, 2) << words << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_EQ(r.err.rfind("kopt: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "out" / "sub_modelnew.py"));
}

}  // namespace
}  // namespace kopt
