// The profiling zoo (tests/profile_zoo/): expected.json is well formed and
// covers every analysis tool, and every zoo candidate compiles with the real
// nvcc with the static evidence its entry claims (spills, SASS widths, MMA).
// Nothing here needs a GPU; the zoo itself is profiled on one by hand.
#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "build/builder.h"
#include "core/json.h"
#include "diagnose/analysis_tool.h"
#include "diagnose/roofline.h"
#include "profile/static_profile.h"
#include "testing/paths.h"

namespace kopt {
namespace {
namespace fs = std::filesystem;

fs::path ZooDir() { return testing::SourceDir() / "tests" / "profile_zoo"; }

/// The recorded entries (expected.json) and those registered but not yet
/// recorded on a GPU (pending.json): both are checked and built here; only
/// recorded ones are replayed (profile_zoo_replay_test).
Json Entries() {
  Json all = ReadJsonFile(ZooDir() / "expected.json");
  if (fs::exists(ZooDir() / "pending.json"))
    for (const Json& e : ReadJsonFile(ZooDir() / "pending.json")) all.push_back(e);
  return all;
}

/// The call-level findings diagnose.cc adds after the tools (not registered
/// tools, but named the same way in findings).
const std::set<std::string> kCallLevelFindings = {"far_from_floor", "excess_traffic"};

std::set<std::string> ClassNames() {
  std::set<std::string> names;
  for (BoundClass c : {BoundClass::kMemoryDram, BoundClass::kMemoryL2, BoundClass::kMemoryL1Shared,
                       BoundClass::kComputeFp32, BoundClass::kComputeTensor, BoundClass::kLatency,
                       BoundClass::kLaunchHost, BoundClass::kSmallGrid}) {
    names.insert(BoundClassName(c));
  }
  return names;
}

// The CUDA source of a candidate: the .cu file, or a hybrid's CUDA_SOURCE = r"""...""".
std::string CudaSource(const fs::path& candidate) {
  std::string text = ReadTextFile(candidate);
  if (candidate.extension() == ".cu") return text;
  const std::string open = "CUDA_SOURCE = r\"\"\"";
  size_t begin = text.find(open);
  if (begin == std::string::npos) return "";
  begin += open.size();
  size_t end = text.find("\"\"\"", begin);
  return end == std::string::npos ? "" : text.substr(begin, end - begin);
}

TEST(ProfileZoo, ExpectedJsonIsWellFormed) {
  const Json entries = Entries();
  ASSERT_TRUE(entries.is_array());
  ASSERT_FALSE(entries.empty());
  const std::vector<std::string> tools = BuiltinTools().Names();
  std::set<std::string> tool_set(tools.begin(), tools.end());
  tool_set.insert(kCallLevelFindings.begin(), kCallLevelFindings.end());
  const std::set<std::string> classes = ClassNames();
  std::set<std::string> names, expected_somewhere, candidates_listed, tasks_listed;
  int good = 0;
  for (const Json& e : entries) {
    ASSERT_TRUE(e.is_object());
    for (const char* key : {"name", "task", "candidate", "flaw", "expect_class"}) {
      ASSERT_TRUE(e.contains(key) && e[key].is_string())
          << "entry lacks string '" << key << "': " << e.dump();
    }
    const std::string name = e["name"];
    SCOPED_TRACE(name);
    EXPECT_TRUE(names.insert(name).second) << "duplicate name";
    ASSERT_TRUE(e.contains("good") && e["good"].is_boolean());
    ASSERT_TRUE(e.contains("expect_tools") && e["expect_tools"].is_array());
    const fs::path task = ZooDir() / e["task"].get<std::string>();
    const fs::path candidate = ZooDir() / e["candidate"].get<std::string>();
    EXPECT_TRUE(fs::is_regular_file(task)) << task;
    EXPECT_TRUE(fs::is_regular_file(candidate)) << candidate;
    EXPECT_TRUE(candidate.extension() == ".cu" || candidate.extension() == ".py") << candidate;
    tasks_listed.insert(task.filename().string());
    candidates_listed.insert(candidate.filename().string());
    EXPECT_TRUE(classes.count(e["expect_class"])) << "unknown class " << e["expect_class"];
    for (const Json& c : e.value("alt_classes", Json::array())) {
      EXPECT_TRUE(classes.count(c.get<std::string>())) << "unknown class " << c;
    }
    for (const char* key : {"expect_tools", "may_also_fire"}) {
      for (const Json& t : e.value(key, Json::array())) {
        ASSERT_TRUE(t.is_string());
        EXPECT_TRUE(tool_set.count(t.get<std::string>())) << key << ": unknown tool " << t;
      }
    }
    const Json expect_advice = e.value("expect_advice", Json::object());
    for (auto it = expect_advice.begin(); it != expect_advice.end(); ++it) {
      const std::string tool = it.key();
      EXPECT_TRUE(it.value().is_string()) << "expect_advice." << tool;
      bool expected = false;
      for (const Json& t : e["expect_tools"]) expected |= t == tool;
      EXPECT_TRUE(expected) << "expect_advice names " << tool << ", which expect_tools does not";
    }
    for (const Json& t : e["expect_tools"]) expected_somewhere.insert(t.get<std::string>());
    if (e["good"].get<bool>()) {
      ++good;
      EXPECT_TRUE(e["expect_tools"].empty()) << "a good entry expects no tool";
    } else {
      EXPECT_FALSE(e["expect_tools"].empty())
          << "a flawed entry names the tool that should catch it";
      if (e["expect_tools"].size() > 1) {
        EXPECT_TRUE(e.contains("note")) << "several expected tools need a note saying why";
      }
    }
  }
  EXPECT_GE(good, 4);
  for (const std::string& t : tools)
    EXPECT_TRUE(expected_somewhere.count(t)) << "no entry expects " << t;
  // No orphans: every file in the zoo is part of an entry.
  auto source = [](const fs::directory_entry& f) {
    return f.is_regular_file() && (f.path().extension() == ".cu" || f.path().extension() == ".py");
  };
  for (const auto& f : fs::directory_iterator(ZooDir() / "candidates")) {
    if (!source(f)) continue;
    EXPECT_TRUE(candidates_listed.count(f.path().filename().string())) << "unlisted " << f.path();
  }
  for (const auto& f : fs::directory_iterator(ZooDir() / "tasks")) {
    if (!source(f)) continue;
    EXPECT_TRUE(tasks_listed.count(f.path().filename().string())) << "unlisted " << f.path();
  }
}

// Builds every candidate once (shared by the tests below).
class ZooBuilds : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::HaveNvcc()) return;
    BuilderOptions bo;
    bo.cache_dir = testing::ScratchDir("profile-zoo") / "builds";
    bo.include_dir = testing::SourceDir() / "include";
    auto builder = MakeNvccBuilder(bo);
    std::vector<BuildRequest> reqs;
    std::vector<std::string> names;
    builds_ = new std::map<std::string, std::pair<std::string, BuildResult>>();
    for (const Json& e : Entries()) {
      const fs::path candidate = ZooDir() / e["candidate"].get<std::string>();
      std::string source = CudaSource(candidate);
      if (source.empty()) {  // a hybrid made of torch operators only: nothing of kopt's to build
        (*builds_)[e["name"].get<std::string>()] = {"", BuildResult{}};
        continue;
      }
      reqs.push_back({source, e["name"].get<std::string>(), {}});
      names.push_back(e["name"]);
    }
    std::vector<BuildResult> results = builder->BuildAll(reqs);
    for (size_t i = 0; i < names.size(); ++i) (*builds_)[names[i]] = {reqs[i].source, results[i]};
  }
  static void TearDownTestSuite() {
    delete builds_;
    builds_ = nullptr;
  }
  void SetUp() override {
    if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  }
  static std::map<std::string, std::pair<std::string, BuildResult>>* builds_;
};
std::map<std::string, std::pair<std::string, BuildResult>>* ZooBuilds::builds_ = nullptr;

bool Matches(const std::string& kernel_or_demangled, const std::string& part) {
  return kernel_or_demangled.find(part) != std::string::npos;
}

TEST_F(ZooBuilds, EveryCandidateCompilesWithTheSpillsItClaims) {
  for (const Json& e : Entries()) {
    const std::string name = e["name"];
    SCOPED_TRACE(name);
    const auto& [source, build] = builds_->at(name);
    if (source.empty()) {
      // Only a hybrid may have no CUDA of its own (torch operators, e.g.
      // cuBLAS), and then it can claim nothing about its SASS.
      EXPECT_EQ(fs::path(e["candidate"].get<std::string>()).extension(), ".py")
          << "no CUDA source found (a hybrid calling kopt.load_cuda needs CUDA_SOURCE = "
             "r\"\"\"...\"\"\")";
      EXPECT_FALSE(e.contains("static")) << "a torch-only hybrid has no SASS of kopt's to check";
      continue;
    }
    EXPECT_TRUE(build.ok) << build.log;
    EXPECT_FALSE(build.resources.empty());
    if (!e.contains("static")) continue;
    const Json& st = e["static"];
    const std::string kernel = st.value("kernel", "");
    const KernelResources* res = nullptr;
    for (const auto& r : build.resources) {
      if (Matches(r.kernel, kernel) || Matches(r.demangled, kernel)) res = &r;
    }
    ASSERT_NE(res, nullptr) << "no kernel named like '" << kernel << "' in the ptxas report";
    if (st.contains("spills")) {
      EXPECT_EQ(res->spill_store_bytes + res->spill_load_bytes > 0, st["spills"].get<bool>())
          << res->spill_store_bytes << " B spill stores, " << res->spill_load_bytes
          << " B spill loads";
    }
  }
}

TEST_F(ZooBuilds, SassHasTheEvidenceTheToolsRead) {
  const std::string cuobjdump = FindCuobjdump();
  if (cuobjdump.empty()) {
    GTEST_SKIP() << "no cuobjdump (set KOPT_CUOBJDUMP, e.g. to the triton wheel's copy)";
  }
  StaticProfileOptions so;
  so.cuobjdump = cuobjdump;
  for (const Json& e : Entries()) {
    if (!e.contains("static")) continue;
    const std::string name = e["name"];
    SCOPED_TRACE(name);
    const auto& build = builds_->at(name).second;
    if (!build.ok) continue;  // reported by the compile test
    const StaticReport report = StaticProfile(build, so);
    ASSERT_TRUE(report.sass_available) << ::testing::PrintToString(report.notes);
    const Json& st = e["static"];
    const std::string kernel = st.value("kernel", "");
    const SassFunction* sass = nullptr;
    for (const auto& k : report.kernels) {
      if (k.sass && (Matches(k.kernel, kernel) || Matches(k.demangled, kernel))) sass = &*k.sass;
    }
    ASSERT_NE(sass, nullptr) << "no SASS for a kernel named like '" << kernel << "'";
    const InstructionMix& mix = sass->mix;
    if (st.contains("tensor_mma")) {
      EXPECT_EQ(mix.tensor_mma > 0, st["tensor_mma"].get<bool>())
          << mix.tensor_mma << " MMA instructions";
    }
    const int total = mix.global_loads.Total() + mix.global_stores.Total();
    const double wide =
        total > 0
            ? static_cast<double>(mix.global_loads.AtLeast(128) + mix.global_stores.AtLeast(128)) /
                  total
            : 0;
    if (st.contains("min_wide_fraction")) {
      EXPECT_GE(wide, st["min_wide_fraction"].get<double>());
    }
    if (st.contains("max_wide_fraction")) {
      EXPECT_LE(wide, st["max_wide_fraction"].get<double>());
    }
    if (st.contains("min_mufu_fraction")) {
      const int fp = mix.ffma + mix.fadd + mix.fmul + mix.mufu;
      ASSERT_GT(fp, 0);
      EXPECT_GE(static_cast<double>(mix.mufu) / fp, st["min_mufu_fraction"].get<double>());
    }
  }
}

}  // namespace
}  // namespace kopt
