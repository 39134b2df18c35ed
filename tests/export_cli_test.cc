// `kopt export --task --candidate` end to end: the binary writes the files;
// a mistake is one sentence on stderr and exit status 2.
#include <gtest/gtest.h>

#include "core/json.h"
#include "core/subprocess.h"
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
           {{"export", "runs/r1"}, "not wired to the run store yet"},
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
