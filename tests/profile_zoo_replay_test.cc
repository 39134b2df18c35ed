// The zoo's profiles recorded on the H200 (tests/data/profile_zoo/<entry>/,
// written by `kopt profile --save`), diagnosed again on the CPU through
// `kopt profile --replay`: each entry's expected tools fire, its class is the
// expected one, and the good kernels stay quiet (the confusion matrix of
// tests/profile_zoo/confusion.py, as a test).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/json.h"
#include "core/subprocess.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct Replayed {
  std::string cls;
  std::set<std::string> fired;  ///< warning or critical
  std::map<std::string, std::string> advice;  ///< tool -> its advice (the last one, if it fired twice)
  Json json;
};

Replayed Replay(const fs::path& dir) {
  fs::path out = testing::ScratchDir("zoo-replay") / (dir.filename().string() + ".json");
  ProcessOptions o;
  o.timeout_s = 60;
  ProcessResult r = RunProcess({KOPT_BINARY, "profile", "--replay", dir.string(), "--json", out.string()}, o);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  Replayed res;
  if (r.exit_code != 0) return res;
  res.json = ReadJsonFile(out);
  const Json& rep = res.json["report"];
  auto collect = [&](const Json& list) {
    for (const auto& d : list) {
      std::string sev = d.value("severity", "");
      if (sev == "warning" || sev == "critical") {
        res.fired.insert(d.value("tool", ""));
        res.advice[d.value("tool", "")] = d.value("advice", "");
      }
    }
  };
  collect(rep["call_diagnoses"]);
  for (const auto& k : rep["kernels"]) collect(k["diagnoses"]);
  res.cls = rep["call"].value("bound", "");
  if (res.cls != "launch_host" && !rep["kernels"].empty()) res.cls = rep["kernels"][0]["roofline"].value("bound", "");
  return res;
}

TEST(ProfileZooReplay, EveryRecordedEntryIsDiagnosedAsExpected) {
  fs::path src = testing::SourceDir();
  Json expected = ReadJsonFile(src / "tests/profile_zoo/expected.json");
  int recorded = 0, false_alarms = 0;
  for (const auto& e : expected) {
    std::string name = e.value("name", "");
    fs::path dir = src / "tests/data/profile_zoo" / name;
    if (!fs::exists(dir / "profile.json")) continue;
    ++recorded;
    Replayed r = Replay(dir);
    std::set<std::string> classes = {e.value("expect_class", "")};
    for (const auto& c : e.value("alt_classes", Json::array())) classes.insert(c.get<std::string>());
    EXPECT_TRUE(classes.count(r.cls)) << name << ": class " << r.cls;
    std::set<std::string> want;
    for (const auto& t : e.value("expect_tools", Json::array())) want.insert(t.get<std::string>());
    // Secondary findings predicted before recording are tolerated on flawed
    // kernels only; a good kernel must be quiet.
    std::set<std::string> tolerated;
    if (!e.value("good", false) && e.contains("may_also_fire") && e["may_also_fire"].is_array())
      for (const auto& t : e["may_also_fire"]) tolerated.insert(t.get<std::string>());
    for (const auto& t : want) EXPECT_TRUE(r.fired.count(t)) << name << ": " << t << " did not fire";
    // A tool that fires for the wrong reason is a miss too: expect_advice
    // names what its advice must say (warp_stalls: the stall reason).
    const Json expect_advice = e.value("expect_advice", Json::object());
    for (auto it = expect_advice.begin(); it != expect_advice.end(); ++it)
      if (r.fired.count(it.key()))
        EXPECT_NE(r.advice[it.key()].find(it.value().get<std::string>()), std::string::npos)
            << name << ": " << it.key() << " said: " << r.advice[it.key()];
    for (const auto& t : r.fired) {
      if (!want.count(t) && !tolerated.count(t)) {
        ++false_alarms;
        ADD_FAILURE() << name << ": " << t << " fired (false alarm)";
      }
    }
  }
  if (recorded == 0) GTEST_SKIP() << "no zoo profile recorded under tests/data/profile_zoo yet";
  EXPECT_EQ(false_alarms, 0);
}

// The shipped ReLU solution profiled on the H200 (tests/data/gpu/README.md):
// the float4 kernel with a scalar tail is at the DRAM roof and nothing is
// wrong with it. The first GPU run of GpuProfile.ReluSolutionIsDramBoundAndClean
// failed here: uncoalesced_global took the tail's 32-bit load as the access
// width and called 16 sectors per request uncoalesced.
TEST(ProfileReplay, TheShippedReluIsAtTheDramRoofAndClean) {
  Replayed r = Replay(testing::SourceDir() / "tests/data/gpu/profile/relu_solution");
  EXPECT_EQ(r.cls, "memory.dram");
  EXPECT_TRUE(r.fired.empty()) << ::testing::PrintToString(r.fired);
}

}  // namespace
}  // namespace kopt
