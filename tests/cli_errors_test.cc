// Every error kopt prints tells the truth, one class of mistake per test:
// the real build/kopt binary on a CPU-only machine (worker on the CPU, real
// nvcc), as a new user meets it.
#include <sys/stat.h>

#include <map>

#include <gtest/gtest.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

ProcessResult Kopt(std::vector<std::string> args,
                   const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), KOPT_BINARY);
  ProcessOptions o;
  o.timeout_s = 300;
  o.env["KOPT_CACHE"] = testing::ScratchDir("cli-errors-cache").string();
  for (const auto& [k, v] : env) o.env[k] = v;
  return RunProcess(args, o);
}

std::string Src(const std::string& rel) { return (testing::SourceDir() / rel).string(); }
const std::string kTask = Src("tasks/level1/03_swish.py");
const std::string kCand = Src("tasks/level1/solutions/03_swish.py");

// One sentence on stderr, prefixed `kopt:`, and exit status 2.
void ExpectOneSentence(const ProcessResult& r, const std::string& says) {
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("kopt: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

fs::path WriteFile(const fs::path& p, const std::string& text, bool executable = false) {
  WriteTextFileAtomic(p, text);
  if (executable) ::chmod(p.c_str(), 0755);
  return p;
}

// 4: every parse error, not only kopt's own.
TEST(CliErrors, ParseErrorsAreOneSentenceAndExitTwo) {
  ExpectOneSentence(Kopt({}), "a subcommand is required: see `kopt --help`");
  ExpectOneSentence(Kopt({"eval"}), "task is required: see `kopt eval --help`");
  ExpectOneSentence(Kopt({"bench", "--bogus"}), "--bogus");
  ExpectOneSentence(Kopt({"profile", "--tier", "3"}), "--tier");
  ExpectOneSentence(Kopt({"eval", kTask, kCand, "--tolerance", "loose"}), "--tolerance");
  ExpectOneSentence(Kopt({"nonsense"}), "nonsense");
  for (std::vector<std::string> ok :
       {std::vector<std::string>{"--help"}, {"eval", "--help"}, {"--version"}}) {
    ProcessResult r = Kopt(ok);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
}

// 1: a bad regular expression is the user's input, not an internal error.
TEST(CliErrors, BadFilterRegexIsTheUsersInput) {
  ExpectOneSentence(Kopt({"bench", Src("tasks"), "--filter", "["}),
                    "--filter: '[' is not a valid regular expression");
}

// 3: numbers where zero, a negative, NaN or infinity make no sense.
TEST(CliErrors, SenselessNumbersAreRejected) {
  for (const char* v : {"-1", "0", "nan", "inf", "abc"}) {
    ExpectOneSentence(Kopt({"bench", Src("tasks"), "--max-seconds", v}),
                      "--max-seconds: give a finite number above zero");
    ExpectOneSentence(Kopt({"eval", kTask, kCand, "--timeout", v}),
                      "--timeout: give a finite number above zero");
  }
  ExpectOneSentence(Kopt({"eval", kTask, kCand, "--max-seconds", "-5"}), "--max-seconds");
  ExpectOneSentence(Kopt({"profile", kTask, kCand, "--max-seconds", "0"}), "--max-seconds");
}

// 8: --device is checked before anything starts, not by torch.
TEST(CliErrors, DeviceIsCheckedUpFront) {
  for (const char* d : {"gpu", "cuda:x", "CPU", "cuda:"}) {
    ProcessResult r = Kopt({"eval", kTask, kCand, "--device", d});
    ExpectOneSentence(r, "--device: give cpu, cuda or cuda:N");
    EXPECT_EQ(r.err.find("Expected one of"), std::string::npos) << r.err;
  }
}

// 5: a directory is a directory.
TEST(CliErrors, CandidateDirectoryIsCalledOne) {
  ProcessResult r = Kopt({"eval", kTask, Src("tasks/level1/solutions"), "--device", "cpu"});
  ExpectOneSentence(r, "is a directory: pass a candidate file");
  EXPECT_EQ(r.err.find("does not exist"), std::string::npos) << r.err;
}

// 7: a syntax error is a syntax error, with file and line, from Python's own
// parser; a `class Model(` that only a docstring holds is no task.
TEST(CliErrors, TaskSyntaxErrorNamesFileAndLine) {
  fs::path dir = testing::ScratchDir("cli-syntax");
  std::string task = ReadTextFile(kTask);
  auto at = task.find("class Model(nn.Module):");
  ASSERT_NE(at, std::string::npos);
  int line = 1 + std::count(task.begin(), task.begin() + at, '\n');
  task.replace(at, 23, "class Model(nn.Module:");
  fs::path bad = WriteFile(dir / "broken.py", task);
  for (const char* cmd : {"eval", "capture"}) {
    std::vector<std::string> args = {cmd, bad.string()};
    if (std::string(cmd) == "eval") args.push_back(kCand);
    args.insert(args.end(), {"--device", "cpu"});
    ProcessResult r = Kopt(args);
    ExpectOneSentence(
        r, bad.string() + ":" + std::to_string(line) + ": the task file has a Python syntax error");
    EXPECT_EQ(r.err.find("not a KernelBench task"), std::string::npos) << r.err;
  }
  fs::path fooled = WriteFile(
      dir / "docstring.py",
      "'''\nclass Model(nn.Module):\n'''\nimport torch\n\ndef get_inputs():\n    return []\n\n"
      "def get_init_inputs():\n    return []\n");
  ExpectOneSentence(Kopt({"capture", fooled.string(), "--device", "cpu"}),
                    "is not a KernelBench task: it has no top-level `class Model(nn.Module)`");
}

// 9: the interpreter given, and what is wrong with it, and advice for the
// flag or variable it came from.
TEST(CliErrors, PythonProblemsNameWhereTheInterpreterCameFrom) {
  ProcessResult r =
      Kopt({"eval", kTask, kCand, "--device", "cpu", "--python", "/bad/path/python3"});
  ExpectOneSentence(r, "--python: the interpreter /bad/path/python3 does not exist: pass --python");
  r = Kopt({"capture", kTask, "--device", "cpu"}, {{"KOPT_PYTHON", "/bad/path/python3"}});
  ExpectOneSentence(
      r,
      "KOPT_PYTHON is set to /bad/path/python3, but the interpreter /bad/path/python3 does not "
      "exist: set KOPT_PYTHON");
  // An interpreter without torch (a stand-in that fails as Python does).
  fs::path fake = WriteFile(
      testing::ScratchDir("cli-notorch") / "python3",
      "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n", true);
  r = Kopt({"eval", kTask, kCand, "--device", "cpu", "--python", fake.string()});
  ExpectOneSentence(r, fake.string() + ": it cannot import torch): pass --python");
  EXPECT_EQ(r.err.find("()"), std::string::npos) << r.err;
  r = Kopt({"capture", kTask, "--device", "cpu"}, {{"KOPT_PYTHON", fake.string()}});
  ExpectOneSentence(r, fake.string() + ": it cannot import torch): set KOPT_PYTHON");
}

// 10: comments and strings do not make a candidate; the built object must
// export kopt_forward with C linkage, else the build failed, saying why.
TEST(CliErrors, AbiIsCheckedInCodeAndInTheBuiltObject) {
  fs::path dir = testing::ScratchDir("cli-abi");
  fs::path comment = WriteFile(dir / "comment.cu",
                               "// kopt_forward is elsewhere\n__global__ void k() {}\n"
                               "const char* name = \"kopt_forward\";\n");
  ExpectOneSentence(Kopt({"eval", kTask, comment.string(), "--device", "cpu"}),
                    "defines no kopt_forward (outside comments and strings)");
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  fs::path cpp = WriteFile(
      dir / "cpp_linkage.cu",
      "#include <stdint.h>\nstruct kopt_tensor;\ntypedef struct CUstream_st* kopt_stream;\n"
      "int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, "
      "kopt_stream s) { return 0; }\n");
  fs::path decl = WriteFile(dir / "declared_only.cu",
                            "#include <kopt/abi.h>\n__global__ void k(float* x) { x[0] = 1.0f; }\n"
                            "int run(kopt_tensor* t) { return kopt_forward(t, 1, t, 1, 0); }\n");
  fs::path json = dir / "eval.json";
  ProcessResult r = Kopt({"eval", Src("python/tests/data/linear_relu.py"), cpp.string(),
                          decl.string(), "--device", "cpu", "--json", json.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  Json j = ReadJsonFile(json);
  ASSERT_EQ(j["records"].size(), 2u) << r.out << r.err;
  for (const auto& rec : j["records"])
    EXPECT_EQ(rec["outcome"]["verdict"], "build_failed") << rec.dump(2);
  EXPECT_NE(j["records"][0]["outcome"]["log"].get<std::string>().find(
                "with C++ linkage (as _Z12kopt_forward"),
            std::string::npos);
  EXPECT_NE(j["records"][1]["outcome"]["log"].get<std::string>().find("defines no kopt_forward"),
            std::string::npos);
  // The verdict line names the reason, not ptxas' first line.
  EXPECT_NE(
      r.out.find(
          "verdict    build failed: kopt: the shared object exports kopt_forward with C++ linkage"),
      std::string::npos)
      << r.out;
}

// 6: a build this process compiled is "compiled", with its time; "cached"
// only when an earlier process compiled it.
TEST(CliErrors, OnlyARealCacheHitSaysCached) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  std::map<std::string, std::string> env = {
      {"KOPT_CACHE", testing::ScratchDir("cli-cached").string()}};
  std::vector<std::string> args = {"eval", Src("python/tests/data/linear_relu.py"),
                                   Src("python/tests/data/linear_relu.cu"), "--device", "cpu"};
  ProcessResult first = Kopt(args, env);
  EXPECT_NE(first.out.find("build      compiled in "), std::string::npos) << first.out << first.err;
  EXPECT_EQ(first.out.find("cached"), std::string::npos) << first.out;
  ProcessResult second = Kopt(args, env);
  EXPECT_NE(second.out.find("build      cached (compiled in "), std::string::npos)
      << second.out << second.err;
}

// 2 and 11: without a GPU, bench says so, writes what it did to --json and
// --html (marked as run without a GPU) and says what works here.
TEST(CliErrors, OfflineBenchWritesWhatItDid) {
  if (testing::HaveGpu()) GTEST_SKIP() << "this machine has a GPU";
  fs::path dir = testing::ScratchDir("cli-offline");
  ProcessResult r = Kopt({"bench", Src("tests/data/cli"), "--json", (dir / "r.json").string(),
                          "--html", (dir / "r.html").string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // the bad-syntax solution fails to compile
  EXPECT_NE(r.out.find("No CUDA GPU is visible"), std::string::npos) << r.out;
  for (const char* can :
       {"--device cpu", "kopt profile --replay DIR", "kopt capture TASK --device cpu"})
    EXPECT_NE(r.out.find(can), std::string::npos) << can << "\n" << r.out;
  ASSERT_TRUE(fs::exists(dir / "r.json")) << r.out << r.err;
  Json j = ReadJsonFile(dir / "r.json");
  EXPECT_EQ(j["gpu"], false);
  EXPECT_NE(j["device"]["name"].get<std::string>().find("no CUDA GPU visible"), std::string::npos);
  std::map<std::string, Json> rows;
  for (const auto& row : j["rows"]) rows[row["solution"].get<std::string>()] = row;
  ASSERT_TRUE(rows.count("linear_relu_bad_syntax.cu")) << j.dump(2);
  EXPECT_EQ(rows["linear_relu_bad_syntax.cu"]["verdict"], "build_failed");
  EXPECT_NE(rows["linear_relu_bad_syntax.cu"]["reason"].get<std::string>().find("error"),
            std::string::npos);
  EXPECT_EQ(rows["linear_relu_bad_syntax.cu"]["build"]["ok"], false);
  ASSERT_TRUE(rows.count("linear_relu.py"));
  EXPECT_NE(rows["linear_relu.py"]["verdict"].get<std::string>().find("not run"),
            std::string::npos);
  std::string html = ReadTextFile(dir / "r.html");
  EXPECT_NE(html.find("no CUDA GPU visible"), std::string::npos);
  EXPECT_NE(html.find("linear_relu_bad_syntax.cu"), std::string::npos);
}

// 18: bench judges every solution under its task's contract, second shape
// included, and its table and JSON say so (the CPU worker, a tiny suite).
TEST(CliErrors, BenchVerifiesEachSolutionOnTheSecondShape) {
  fs::path suite = testing::ScratchDir("cli-bench-shape");
  fs::create_directories(suite / "solutions");
  auto copy = [&](const std::string& from, const fs::path& to) {
    fs::copy_file(Src("python/tests/data/" + from), to, fs::copy_options::overwrite_existing);
  };
  copy("relu_sized.py", suite / "relu_sized.py");
  copy("relu_numpy.py", suite / "solutions/relu_sized_numpy.py");
  copy("relu_hardcoded.py", suite / "solutions/relu_sized_hardcoded.py");
  WriteFile(suite / "relu_sized.contract.json", R"({"second_shape": {"batch_size": 17}})");
  fs::path json = suite / "r.json";
  ProcessResult r = Kopt({"bench", suite.string(), "--device", "cpu", "--no-compile",
                          "--max-seconds", "0.2", "--json", json.string()});
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  Json j = ReadJsonFile(json);
  ASSERT_EQ(j["rows"].size(), 2u) << j.dump(2);
  std::map<std::string, Json> rows;
  for (const auto& row : j["rows"]) rows[row["solution"].get<std::string>()] = row;
  EXPECT_EQ(rows["relu_sized_numpy.py"]["verdict"], "measured")
      << rows["relu_sized_numpy.py"].dump(2);
  EXPECT_EQ(rows["relu_sized_numpy.py"]["second_shape"]["batch_size"], 17);
  EXPECT_EQ(rows["relu_sized_hardcoded.py"]["verdict"], "incorrect");
  EXPECT_NE(rows["relu_sized_hardcoded.py"]["reason"].get<std::string>().find(
                "second shape (batch_size=17)"),
            std::string::npos)
      << rows["relu_sized_hardcoded.py"].dump(2);
  EXPECT_NE(r.out.find("every solution was also verified with these module-level sizes"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("batch_size=17"), std::string::npos) << r.out;
}

// 19: kopt capture prints the operators it charged no FLOPs for.
TEST(CliErrors, CaptureListsUncountedOperators) {
  ProcessResult r = Kopt(
      {"capture", Src("python/tests/data/uncounted_ops.py"), "--device", "cpu", "--no-compile"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("uncounted aten::sort: run by the reference, but kopt has no FLOP rule"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("floor    none"), std::string::npos) << r.out;  // no ceilings on the CPU
}

}  // namespace
}  // namespace kopt
