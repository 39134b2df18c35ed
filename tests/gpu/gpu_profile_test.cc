// On a real GPU with Nsight Compute: kopt profile end to end on a shipped
// solution and on a zoo kernel with a known flaw.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/json.h"
#include "core/subprocess.h"
#include "profile/profiler.h"
#include "store/run_store.h"
#include "testing/paths.h"

namespace kopt {
namespace {

Json Profile(const std::string& task, const std::string& cand, const std::string& name,
             const std::vector<std::string>& extra = {}) {
  auto root = testing::SourceDir();
  auto out = testing::ScratchDir("gpu-profile") / (name + ".json");
  ProcessOptions o;
  o.timeout_s = 300;
  o.env["KOPT_CACHE"] = testing::ScratchDir("gpu-profile-cache").string();
  // KOPT_BIN: a kopt binary carried to the GPU machine (bench/gpu_steps.sh).
  const char* bin = std::getenv("KOPT_BIN");
  std::vector<std::string> argv = {bin && *bin ? bin : KOPT_BINARY,
                                   "profile",
                                   (root / task).string(),
                                   (root / cand).string(),
                                   "--max-seconds",
                                   "0.2",
                                   "--json",
                                   out.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ProcessResult r = RunProcess(argv, o);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return r.exit_code == 0 ? ReadJsonFile(out) : Json();
}

TEST(GpuProfile, ReluSolutionIsDramBoundAndClean) {
  KOPT_REQUIRE_GPU();
  if (FindNcu().empty()) GTEST_SKIP() << "needs ncu";
  Json j = Profile("tasks/level1/01_relu.py", "tasks/level1/solutions/01_relu.cu", "relu");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["report"]["kernels"][0]["roofline"]["bound"], "memory.dram");
  for (const auto& k : j["report"]["kernels"])
    for (const auto& d : k["diagnoses"]) EXPECT_NE(d["severity"], "critical") << d["tool"];
  EXPECT_TRUE(j["tier_seconds"].contains("ncu tier 1"));
  EXPECT_TRUE(j["tier_seconds"].contains("static"));
}

// Also the champion's tier: --source adds the source-level counters of the
// kernel taking the most time, each hot instruction with its main stall reason.
TEST(GpuProfile, BankConflictsAreFoundOnTheUnpaddedTranspose) {
  KOPT_REQUIRE_GPU();
  if (FindNcu().empty()) GTEST_SKIP() << "needs ncu";
  Json j = Profile("tests/profile_zoo/tasks/transpose.py",
                   "tests/profile_zoo/candidates/transpose_unpadded.cu", "transpose", {"--source"});
  ASSERT_TRUE(j.is_object());
  bool found = false;
  for (const auto& k : j["report"]["kernels"])
    for (const auto& d : k["diagnoses"]) found |= d["tool"] == "bank_conflicts";
  EXPECT_TRUE(found);
  EXPECT_TRUE(j["tier_seconds"].contains("ncu source"));
  ASSERT_TRUE(j["hotspots"].is_object()) << j.dump();
  EXPECT_FALSE(j["hotspots"].contains("error")) << j["hotspots"].dump();
  EXPECT_GT(j["hotspots"]["total_samples"].get<double>(), 0);
  ASSERT_FALSE(j["hotspots"]["top"].empty());
  EXPECT_FALSE(j["hotspots"]["top"][0]["top_reason"].get<std::string>().empty());
}

// The loop's profile stage: kopt optimize profiles a new best with Nsight
// Compute while its workers wait, and keeps the diagnosis report in the run.
TEST(GpuProfile, OptimizeProfilesANewBestIntoTheRunStore) {
  KOPT_REQUIRE_GPU();
  if (FindNcu().empty()) GTEST_SKIP() << "needs ncu";
  auto root = testing::SourceDir();
  auto dir = testing::ScratchDir("gpu-optimize-profile");
  ProcessOptions o;
  o.timeout_s = 400;
  o.env["KOPT_CACHE"] = testing::ScratchDir("gpu-profile-cache").string();
  const char* bin = std::getenv("KOPT_BIN");
  std::vector<std::string> argv = {bin && *bin ? bin : KOPT_BINARY,
                                   "optimize",
                                   (root / "tasks/level1/30_var_mean.py").string(),
                                   "--proposer",
                                   "replay",
                                   "--candidates",
                                   (root / "tasks/level1/solutions/30_var_mean.cu").string(),
                                   "--profile",
                                   "best",
                                   "--finalists",
                                   "0",
                                   "--no-compile",
                                   "--max-seconds",
                                   "0.2",
                                   "--store",
                                   (dir / "runs.db").string(),
                                   "--json",
                                   (dir / "r.json").string()};
  ProcessResult r = RunProcess(argv, o);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json j = ReadJsonFile(dir / "r.json");
  EXPECT_EQ(j["tasks"][0]["profiled"], 1) << j.dump();
  auto store = MakeSqliteRunStore(dir / "runs.db");
  auto profiles = store->ListProfiles(j["run"].get<std::string>(), 0);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].node, j["tasks"][0]["best_node"].get<int>());
  const Json& p = profiles[0].profile;
  EXPECT_TRUE(p["tier_seconds"].contains("ncu tier 1")) << p.dump();
  ASSERT_FALSE(p["report"]["kernels"].empty()) << p.dump();
  EXPECT_FALSE(p["report"]["kernels"][0]["roofline"]["bound"].get<std::string>().empty());
  EXPECT_GT(p["context"]["time_ms"].get<double>(), 0);
  // The profile's time is spent from the run's GPU budget.
  EXPECT_GT(j["spent"]["gpu_s"].get<double>(), p["tier_seconds"]["ncu tier 1"].get<double>());
}

}  // namespace
}  // namespace kopt
