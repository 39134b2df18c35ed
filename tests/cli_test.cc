// The kopt binary end to end on a CPU-only machine: the worker runs PyTorch
// on the CPU, candidates are real files, nvcc is real.
#include <gtest/gtest.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "testing/paths.h"

namespace kopt {
namespace {

struct KoptRun {
  ProcessResult r;
  std::string all() const { return r.out + r.err; }
};

KoptRun Kopt(std::vector<std::string> args) {
  args.insert(args.begin(), KOPT_BINARY);
  ProcessOptions o;
  o.timeout_s = 300;
  o.env["KOPT_CACHE"] = testing::ScratchDir("cli-cache").string();
  return KoptRun{RunProcess(args, o)};
}

std::string Data(const std::string& rel) { return (testing::SourceDir() / "tests/data/cli" / rel).string(); }

TEST(Cli, HelpListsSubcommands) {
  KoptRun r = Kopt({"--help"});
  EXPECT_EQ(r.r.exit_code, 0);
  for (const char* sub : {"capture", "eval", "bench"}) EXPECT_NE(r.r.out.find(sub), std::string::npos);
}

TEST(Cli, BadInputIsOneSentenceNotACrash) {
  KoptRun missing = Kopt({"eval", "/nonexistent/task.py", Data("solutions/linear_relu.py"), "--device", "cpu"});
  EXPECT_EQ(missing.r.exit_code, 2);
  EXPECT_NE(missing.r.err.find("does not exist"), std::string::npos);
  EXPECT_EQ(std::count(missing.r.err.begin(), missing.r.err.end(), '\n'), 1) << missing.r.err;

  KoptRun not_task = Kopt({"eval", Data("solutions/linear_relu.py"), Data("solutions/linear_relu.py"), "--device", "cpu"});
  EXPECT_EQ(not_task.r.exit_code, 2);
  EXPECT_NE(not_task.r.err.find("is not a KernelBench task"), std::string::npos);

  KoptRun not_candidate = Kopt({"eval", Data("linear_relu.py"), Data("linear_relu.py"), "--device", "cpu"});
  EXPECT_EQ(not_candidate.r.exit_code, 2);
  EXPECT_NE(not_candidate.r.err.find("ModelNew"), std::string::npos);
}

TEST(Cli, EvalOnCpuGivesEachCandidateItsVerdict) {
  auto dir = testing::ScratchDir("cli-eval");
  auto json = (dir / "eval.json").string();
  KoptRun r = Kopt({"eval", Data("linear_relu.py"), Data("solutions/linear_relu.py"), Data("solutions/linear_relu_half.py"),
                Data("solutions/linear_relu_mutates.py"), Data("solutions/linear_relu_bad_syntax.cu"), "--device",
                "cpu", "--max-seconds", "0.2", "--json", json});
  ASSERT_FALSE(r.r.timed_out) << r.all();
  EXPECT_EQ(r.r.exit_code, 1) << r.all();  // some candidates fail
  Json j = ReadJsonFile(json);
  ASSERT_EQ(j["records"].size(), 4u) << r.all();
  EXPECT_EQ(j["records"][0]["outcome"]["verdict"], "measured") << j["records"][0].dump(2);
  EXPECT_EQ(j["records"][1]["outcome"]["verdict"], "incorrect");
  EXPECT_NE(j["records"][1]["outcome"]["reasons"][0].get<std::string>().find("float64 truth"), std::string::npos);
  EXPECT_EQ(j["records"][2]["outcome"]["verdict"], "incorrect");
  EXPECT_NE(j["records"][2]["outcome"]["reasons"][0].get<std::string>().find("modified its inputs"),
            std::string::npos);
  EXPECT_EQ(j["records"][3]["outcome"]["verdict"], "build_failed");
  // Every timing sample is kept in the record.
  EXPECT_GT(j["records"][0]["timing"]["samples"]["candidate"]["host_ms"].size(), 3u);
  EXPECT_NE(r.r.out.find("verdict    correct"), std::string::npos) << r.r.out;
}

TEST(Cli, EvalOnCpuRejectsIntegrityCheats) {
  // The CPU-runnable cheats of tests/adversarial, on a small task: each is
  // rejected with its own reason, end to end (worker facts + C++ verdict).
  auto py = [](const std::string& f) { return (testing::SourceDir() / "python/tests/data" / f).string(); };
  auto json = (testing::ScratchDir("cli-adv") / "eval.json").string();
  KoptRun r = Kopt({"eval", py("linear_relu.py"), py("adv_patch_sync.py"), py("adv_patch_clock.py"),
                    py("adv_lazy_subclass.py"), py("adv_flaky.py"), "--device", "cpu", "--max-seconds", "0.2",
                    "--json", json});
  ASSERT_FALSE(r.r.timed_out) << r.all();
  Json j = ReadJsonFile(json);
  ASSERT_EQ(j["records"].size(), 4u) << r.all();
  const char* expect[] = {"replaced torch.cuda.synchronize; timing cannot be trusted",
                          "replaced time.perf_counter", "not a plain torch.Tensor",
                          "changes between runs on the same inputs"};
  for (size_t i = 0; i < 4; ++i) {
    const Json& o = j["records"][i]["outcome"];
    EXPECT_EQ(o["verdict"], "incorrect") << o.dump(2);
    EXPECT_NE(o.value("reasons", Json::array()).dump().find(expect[i]), std::string::npos) << o.dump(2);
  }
}

TEST(Cli, BenchWithoutGpuSaysSoAndCompilesSolutions) {
  if (testing::HaveGpu()) GTEST_SKIP() << "this machine has a GPU";
  KoptRun r = Kopt({"bench", (testing::SourceDir() / "tests/data/cli").string()});
  EXPECT_EQ(r.r.exit_code, 1) << r.all();  // the bad-syntax solution fails to compile
  EXPECT_NE(r.r.out.find("No CUDA GPU is visible"), std::string::npos) << r.all();
  EXPECT_NE(r.r.out.find("linear_relu_bad_syntax.cu"), std::string::npos);
  EXPECT_NE(r.r.out.find("FAILED"), std::string::npos);
}

TEST(Cli, CaptureOnCpu) {
  KoptRun r = Kopt({"capture", Data("linear_relu.py"), "--device", "cpu", "--no-compile"});
  EXPECT_EQ(r.r.exit_code, 0) << r.all();
  EXPECT_NE(r.r.out.find("lin.weight"), std::string::npos) << r.r.out;
  EXPECT_NE(r.r.out.find("[32, 64]"), std::string::npos);
}

}  // namespace
}  // namespace kopt
