// The kopt binary end to end on a CPU-only machine: the worker runs PyTorch
// on the CPU, candidates are real files, nvcc is real.
#include <map>

#include <gtest/gtest.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct KoptRun {
  ProcessResult r;
  std::string all() const { return r.out + r.err; }
};

KoptRun Kopt(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), KOPT_BINARY);
  ProcessOptions o;
  o.timeout_s = 300;
  o.env["KOPT_CACHE"] = testing::ScratchDir("cli-cache").string();
  for (const auto& [k, v] : env) o.env[k] = v;
  return KoptRun{RunProcess(args, o)};
}

std::string PyData(const std::string& f) {
  return (testing::SourceDir() / "python/tests/data" / f).string();
}

std::string Reasons(const Json& record) {
  return record["outcome"].value("reasons", Json::array()).dump();
}

std::string Data(const std::string& rel) {
  return (testing::SourceDir() / "tests/data/cli" / rel).string();
}

TEST(Cli, HelpListsSubcommands) {
  KoptRun r = Kopt({"--help"});
  EXPECT_EQ(r.r.exit_code, 0);
  for (const char* sub : {"capture", "eval", "bench", "profile", "report", "build"})
    EXPECT_NE(r.r.out.find(sub), std::string::npos);
}

// kopt build: the Builder's recipe and cache from the command line (what
// kopt.load_cuda asks for), the .so path first, then ptxas's resources.
TEST(Cli, BuildPrintsTheSharedObjectAndItsResources) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "needs nvcc";
  fs::path dir = testing::ScratchDir("cli-build");
  fs::path cache = dir / "cache";
  WriteTextFileAtomic(dir / "scale.cu",
                      "#include <kopt/abi.h>\n"
                      "__global__ void scale2(const float* x, float* y, long long n) {\n"
                      "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "  if (i < n) y[i] = 2.0f * x[i];\n}\n"
                      "extern \"C\" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* "
                      "out, int n_out,\n"
                      "                            kopt_stream s) { return 0; }\n");
  std::vector<std::string> args = {
      "build", (dir / "scale.cu").string(), "--cache", cache.string(), "--arch", "sm_90"};
  KoptRun r = Kopt(args);
  ASSERT_EQ(r.r.exit_code, 0) << r.all();
  std::string so = r.r.out.substr(0, r.r.out.find('\n'));
  EXPECT_EQ(fs::path(so).filename(), "candidate.so") << r.r.out;
  EXPECT_EQ(fs::path(so).parent_path().parent_path(), cache / "builds") << r.r.out;
  EXPECT_TRUE(fs::is_regular_file(so));
  EXPECT_NE(r.r.out.find("scale2"), std::string::npos) << r.r.out;  // ptxas's report of the kernel
  EXPECT_NE(r.r.out.find("registers"), std::string::npos) << r.r.out;

  args.push_back("--json");
  KoptRun again = Kopt(args);
  ASSERT_EQ(again.r.exit_code, 0) << again.all();
  Json j = Json::parse(again.r.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_TRUE(j["cache_hit"].get<bool>());  // the same content-hash cache
  EXPECT_EQ(j["so_path"], so);

  WriteTextFileAtomic(dir / "broken.cu", "extern \"C\" int kopt_forward(this is not C++);\n");
  KoptRun bad = Kopt({"build", (dir / "broken.cu").string(), "--cache", cache.string(), "--arch",
                      "sm_90", "--json"});
  EXPECT_EQ(bad.r.exit_code, 1) << bad.all();
  Json b = Json::parse(bad.r.out);
  EXPECT_FALSE(b["ok"].get<bool>());
  EXPECT_NE(b["log"].get<std::string>().find("error"), std::string::npos);

  KoptRun missing = Kopt({"build", (dir / "none.cu").string(), "--cache", cache.string()});
  EXPECT_EQ(missing.r.exit_code, 2);
  EXPECT_NE(missing.r.err.find("is not a file"), std::string::npos) << missing.r.err;
}

// kopt profile --replay on a folder laid out as --save writes it, built from
// the ncu and SASS recordings of tests/data (no GPU needed).
TEST(Cli, ProfileReplaysASavedProfile) {
  fs::path dir = testing::ScratchDir("profile-replay");
  fs::path src = testing::SourceDir();
  fs::copy_file(src / "tests/data/ncu/h200_raw_page.csv", dir / "ncu_tier1.csv",
                fs::copy_options::overwrite_existing);
  fs::copy_file(src / "tests/data/sass/kernels_sm90.sass", dir / "sass.txt",
                fs::copy_options::overwrite_existing);
  Json device = {
      {"name", "NVIDIA H200"}, {"cc", {9, 0}}, {"sm_count", 132}, {"torch", "2.11.0+cu130"}};
  Json ceilings = {{"bandwidth_bytes_per_s", 4.67e12},
                   {"fp32_flops_per_s", 6.69e13},
                   {"tf32_flops_per_s", 4.9e14},
                   {"bf16_flops_per_s", 1.07e15},
                   {"fp16_flops_per_s", 1.07e15}};
  WriteJsonFileAtomic(
      dir / "profile.json",
      Json{{"task", "fixtures"},
           {"candidate", "profile_fixtures.cu"},
           {"kind", "cuda"},
           {"context", {{"device", device}, {"ceilings", ceilings}, {"time_ms", 4.2}}},
           {"tier_seconds", {{"ncu tier 1", 1.0}}}});
  fs::path out = dir / "out.json";
  fs::path html = dir / "out.html";
  KoptRun r =
      Kopt({"profile", "--replay", dir.string(), "--json", out.string(), "--html", html.string()});
  ASSERT_EQ(r.r.exit_code, 0) << r.all();
  EXPECT_NE(ReadTextFile(html).find("bank_conflicts"), std::string::npos);
  EXPECT_NE(r.r.out.find("diagnoses, most valuable first"), std::string::npos) << r.r.out;
  EXPECT_NE(r.r.out.find("bank_conflicts on smem_column_read"), std::string::npos) << r.r.out;
  EXPECT_NE(r.r.out.find("uncoalesced_global on transpose_naive"), std::string::npos) << r.r.out;
  Json j = ReadJsonFile(out);
  EXPECT_EQ(j["report"]["kernels"].size(), 9u);
  EXPECT_EQ(j["report"]["kernels"][0]["kernel"].get<std::string>().substr(0, 14), "register_spill");

  KoptRun bad = Kopt({"profile", "--replay", (dir / "missing").string()});
  EXPECT_EQ(bad.r.exit_code, 2);
  EXPECT_NE(bad.r.err.find("holds no profile.json"), std::string::npos) << bad.all();
  fs::path broken = testing::ScratchDir("profile-replay-broken");
  WriteJsonFileAtomic(broken / "profile.json", Json{{"task", 1}});
  KoptRun worse = Kopt({"profile", "--replay", broken.string()});
  EXPECT_EQ(worse.r.exit_code, 2) << worse.all();  // one sentence, not an internal error
  EXPECT_NE(worse.r.err.find("is not a profile kopt wrote"), std::string::npos) << worse.all();
}

TEST(Cli, BadInputIsOneSentenceNotACrash) {
  KoptRun missing =
      Kopt({"eval", "/nonexistent/task.py", Data("solutions/linear_relu.py"), "--device", "cpu"});
  EXPECT_EQ(missing.r.exit_code, 2);
  EXPECT_NE(missing.r.err.find("does not exist"), std::string::npos);
  EXPECT_EQ(std::count(missing.r.err.begin(), missing.r.err.end(), '\n'), 1) << missing.r.err;

  KoptRun not_task = Kopt({"eval", Data("solutions/linear_relu.py"),
                           Data("solutions/linear_relu.py"), "--device", "cpu"});
  EXPECT_EQ(not_task.r.exit_code, 2);
  EXPECT_NE(not_task.r.err.find("is not a KernelBench task"), std::string::npos);

  KoptRun not_candidate =
      Kopt({"eval", Data("linear_relu.py"), Data("linear_relu.py"), "--device", "cpu"});
  EXPECT_EQ(not_candidate.r.exit_code, 2);
  EXPECT_NE(not_candidate.r.err.find("ModelNew"), std::string::npos);
}

TEST(Cli, EvalOnCpuGivesEachCandidateItsVerdict) {
  auto dir = testing::ScratchDir("cli-eval");
  auto json = (dir / "eval.json").string();
  KoptRun r = Kopt({"eval", Data("linear_relu.py"), Data("solutions/linear_relu.py"),
                    Data("solutions/linear_relu_half.py"), Data("solutions/linear_relu_mutates.py"),
                    Data("solutions/linear_relu_bad_syntax.cu"), "--device", "cpu", "--max-seconds",
                    "0.2", "--json", json, "--html", (dir / "eval.html").string()});
  ASSERT_FALSE(r.r.timed_out) << r.all();
  EXPECT_EQ(r.r.exit_code, 1) << r.all();  // some candidates fail
  Json j = ReadJsonFile(json);
  ASSERT_EQ(j["records"].size(), 4u) << r.all();
  EXPECT_EQ(j["records"][0]["outcome"]["verdict"], "measured") << j["records"][0].dump(2);
  EXPECT_EQ(j["records"][1]["outcome"]["verdict"], "incorrect");
  EXPECT_NE(j["records"][1]["outcome"]["reasons"][0].get<std::string>().find("float64 truth"),
            std::string::npos);
  EXPECT_EQ(j["records"][2]["outcome"]["verdict"], "incorrect");
  EXPECT_NE(j["records"][2]["outcome"]["reasons"][0].get<std::string>().find("modified its inputs"),
            std::string::npos);
  EXPECT_EQ(j["records"][3]["outcome"]["verdict"], "build_failed");
  // Every timing sample is kept in the record.
  EXPECT_GT(j["records"][0]["timing"]["samples"]["candidate"]["host_ms"].size(), 3u);
  EXPECT_NE(r.r.out.find("verdict    correct"), std::string::npos) << r.r.out;
  std::string html = ReadTextFile(dir / "eval.html");
  EXPECT_NE(html.find("build failed"), std::string::npos);
  EXPECT_NE(html.find("modified its inputs"), std::string::npos);
}

// kopt report renders a saved result; a JSON that is not one is one sentence.
TEST(Cli, ReportRendersSavedResults) {
  fs::path dir = testing::ScratchDir("cli-report");
  fs::copy_file(testing::SourceDir() / "tests/data/report/bench_h200_s3.json", dir / "bench.json",
                fs::copy_options::overwrite_existing);
  KoptRun r = Kopt({"report", (dir / "bench.json").string()});
  ASSERT_EQ(r.r.exit_code, 0) << r.all();
  EXPECT_NE(r.r.out.find("bench.html"), std::string::npos);
  EXPECT_NE(ReadTextFile(dir / "bench.html").find("<svg"), std::string::npos);

  WriteJsonFileAtomic(dir / "other.json", Json{{"hello", 1}});
  KoptRun bad =
      Kopt({"report", (dir / "other.json").string(), "-o", (dir / "other.html").string()});
  EXPECT_EQ(bad.r.exit_code, 2);
  EXPECT_NE(bad.r.err.find("is not a kopt result"), std::string::npos) << bad.all();
  EXPECT_EQ(std::count(bad.r.err.begin(), bad.r.err.end(), '\n'), 1) << bad.r.err;
  EXPECT_FALSE(fs::exists(dir / "other.html"));
}

TEST(Cli, EvalOnCpuRejectsIntegrityCheats) {
  // The CPU-runnable cheats of tests/adversarial, on a small task: each is
  // rejected with its own reason, end to end (worker facts + C++ verdict).
  auto py = [](const std::string& f) {
    return (testing::SourceDir() / "python/tests/data" / f).string();
  };
  auto json = (testing::ScratchDir("cli-adv") / "eval.json").string();
  KoptRun r = Kopt({"eval", py("linear_relu.py"), py("adv_patch_sync.py"), py("adv_patch_clock.py"),
                    py("adv_lazy_subclass.py"), py("adv_flaky.py"), "--device", "cpu",
                    "--max-seconds", "0.2", "--json", json});
  ASSERT_FALSE(r.r.timed_out) << r.all();
  Json j = ReadJsonFile(json);
  ASSERT_EQ(j["records"].size(), 4u) << r.all();
  const char* expect[] = {"replaced torch.cuda.synchronize; timing cannot be trusted",
                          "replaced time.perf_counter", "not a plain torch.Tensor",
                          "changes between runs on the same inputs"};
  for (size_t i = 0; i < 4; ++i) {
    const Json& o = j["records"][i]["outcome"];
    EXPECT_EQ(o["verdict"], "incorrect") << o.dump(2);
    EXPECT_NE(o.value("reasons", Json::array()).dump().find(expect[i]), std::string::npos)
        << o.dump(2);
  }
}

TEST(Cli, EvalEnforcesTheContractFromTheCommandLine) {
  // relu_sized.py: a (batch_size, dim) ReLU. Forbidding torch operators and
  // asking for a second shape: the candidate calling the task's Model and the
  // one hard-coding the row count fail, each for its own reason; a ReLU that
  // calls no torch operator (numpy stands in for a kernel) passes both.
  auto json = (testing::ScratchDir("cli-contract") / "eval.json").string();
  KoptRun r = Kopt({"eval", PyData("relu_sized.py"), PyData("relu_finds_model.py"),
                    PyData("relu_hardcoded.py"), PyData("relu_numpy.py"), "--forbid-torch-ops",
                    "--second-shape", "batch_size=17", "--device", "cpu", "--max-seconds", "0.2",
                    "--json", json});
  ASSERT_FALSE(r.r.timed_out) << r.all();
  EXPECT_NE(r.r.out.find("contract   precision strict (fp32); torch operators forbidden"),
            std::string::npos)
      << r.r.out;
  EXPECT_NE(r.r.out.find("second shape batch_size=17 (from command line)"), std::string::npos)
      << r.r.out;
  Json j = ReadJsonFile(json);
  ASSERT_EQ(j["records"].size(), 3u) << r.all();
  const Json& model = j["records"][0];
  EXPECT_EQ(model["outcome"]["verdict"], "incorrect");
  EXPECT_NE(Reasons(model).find("the contract forbids torch operators"), std::string::npos)
      << Reasons(model);
  EXPECT_NE(Reasons(model).find("aten::relu"), std::string::npos) << Reasons(model);
  const Json& hard = j["records"][1];
  EXPECT_NE(Reasons(hard).find("on the contract's second shape (batch_size=17)"), std::string::npos)
      << Reasons(hard);
  EXPECT_NE(Reasons(hard).find("static check: the source calls torch.relu"), std::string::npos)
      << Reasons(hard);
  const Json& honest = j["records"][2];
  EXPECT_EQ(honest["outcome"]["verdict"], "measured") << honest.dump(2);
  EXPECT_EQ(honest["contract"]["torch_ops"], false);
  EXPECT_EQ(honest["contract"]["second_shape"]["batch_size"], 17);
}

TEST(Cli, ContractFileBesideTheTaskAndItsOverride) {
  auto dir = testing::ScratchDir("cli-contract-file");
  std::filesystem::copy_file(PyData("relu_sized.py"), dir / "relu_sized.py",
                             std::filesystem::copy_options::overwrite_existing);
  WriteTextFileAtomic(dir / "relu_sized.contract.json", R"({"torch_ops": false})");
  auto json = (dir / "eval.json").string();
  KoptRun r = Kopt({"eval", (dir / "relu_sized.py").string(), PyData("relu_finds_model.py"),
                    "--device", "cpu", "--max-seconds", "0.2", "--json", json});
  EXPECT_NE(r.r.out.find("relu_sized.contract.json"), std::string::npos) << r.all();
  EXPECT_EQ(ReadJsonFile(json)["records"][0]["outcome"]["verdict"], "incorrect") << r.all();
  r = Kopt({"eval", (dir / "relu_sized.py").string(), PyData("relu_finds_model.py"),
            "--allow-torch-ops", "--device", "cpu", "--max-seconds", "0.2", "--json", json});
  EXPECT_EQ(ReadJsonFile(json)["records"][0]["outcome"]["verdict"], "measured") << r.all();

  KoptRun bad = Kopt({"eval", PyData("relu_sized.py"), PyData("relu_numpy.py"), "--second-shape",
                      "batch_size", "--device", "cpu"});
  EXPECT_EQ(bad.r.exit_code, 2) << bad.all();
  EXPECT_NE(bad.r.err.find("give NAME=INTEGER"), std::string::npos) << bad.all();
}

TEST(Cli, SandboxedEvalRejectsNetworkAndOutsideWrites) {
  // The CPU-only attack candidates of python/tests/data under --sandbox: the
  // connection and the write outside scratch are refused by the operating
  // system and reported as sandbox violations naming what was tried.
  auto dir = testing::ScratchDir("cli-sandbox");
  std::filesystem::path target = dir / "escaped.txt";
  WriteTextFileAtomic(dir / "escape.json",
                      Json{{"connect", {"tcp:1.1.1.1:80"}}, {"write", {target.string()}}}.dump());
  auto json = (dir / "eval.json").string();
  KoptRun r = Kopt({"eval", PyData("linear_relu.py"), PyData("linear_relu_net_escape.py"),
                    PyData("linear_relu_write_escape.py"), "--sandbox", "--device", "cpu",
                    "--max-seconds", "0.2", "--json", json},
                   {{"KOPT_ESCAPE_CONFIG", (dir / "escape.json").string()}});
  ASSERT_FALSE(r.r.timed_out) << r.all();
  if (r.r.err.find("weaker sandbox") != std::string::npos)
    GTEST_SKIP() << "this machine cannot make the full sandbox: " << r.r.err;
  Json j = ReadJsonFile(json);
  ASSERT_EQ(j["records"].size(), 2u) << r.all();
  const Json& net = j["records"][0]["outcome"];
  EXPECT_EQ(net["verdict"], "crashed") << net.dump(2);
  EXPECT_EQ(net["kind"], "sandbox_violation") << net.dump(2);
  EXPECT_NE(net["summary"].get<std::string>().find("the sandbox has no network"), std::string::npos)
      << net.dump(2);
  const Json& write = j["records"][1]["outcome"];
  EXPECT_EQ(write["kind"], "sandbox_violation") << write.dump(2);
  EXPECT_NE(write["summary"].get<std::string>().find("outside its scratch directory"),
            std::string::npos)
      << write.dump(2);
  EXPECT_FALSE(std::filesystem::exists(target));
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

// A hybrid's embedded CUDA (a module-level raw literal handed to
// kopt.load_cuda unchanged) is compiled ahead by the loop, into the cache
// the worker's `kopt build` reads: here the candidate never calls
// load_cuda, so only the prebuild can have put the build there.
TEST(Cli, EvalBuildsAHybridsEmbeddedCudaAhead) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "needs nvcc";
  fs::path dir = testing::ScratchDir("cli-embedded");
  fs::path cache = dir / "cache";
  const std::string cuda = ReadTextFile(PyData("linear_relu.cu"));
  WriteTextFileAtomic(
      dir / "hybrid.py",
      "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport kopt\n\n"
      "CUDA_SOURCE = r\"\"\"" +
          cuda +
          "\"\"\"\n\n\n"
          "def _unused():\n    return kopt.load_cuda(CUDA_SOURCE, name=\"linear_relu_ahead\")\n\n\n"
          "class ModelNew(nn.Module):\n"
          "    def __init__(self, in_features, out_features):\n"
          "        super().__init__()\n"
          "        self.linear = nn.Linear(in_features, out_features)\n\n"
          "    def forward(self, x):\n"
          "        return F.linear(x, self.linear.weight, self.linear.bias).clamp_min(0.0)\n");
  KoptRun r = Kopt({"eval", PyData("linear_relu.py"), (dir / "hybrid.py").string(), "--device",
                    "cpu", "--arch", "host", "--max-seconds", "0.2"},
                   {{"KOPT_CACHE", cache.string()}});
  ASSERT_EQ(r.r.exit_code, 0) << r.all();
  // What load_cuda would run inside the worker: `kopt build` with the
  // worker's cache ($KOPT_CACHE/so) and arch.
  WriteTextFileAtomic(dir / "linear_relu_ahead.cu", cuda);
  KoptRun b = Kopt({"build", (dir / "linear_relu_ahead.cu").string(), "--json"},
                   {{"KOPT_CACHE", (cache / "so").string()}, {"KOPT_ARCH", "host"}});
  ASSERT_EQ(b.r.exit_code, 0) << b.all();
  Json built = Json::parse(b.r.out.substr(b.r.out.rfind('{')));
  EXPECT_TRUE(built.value("cache_hit", false)) << b.r.out;
}

}  // namespace
}  // namespace kopt
