// The zoo's profiles recorded on the H200 (tests/data/profile_zoo/<entry>/,
// written by `kopt profile --save`), diagnosed again on the CPU through
// `kopt profile --replay`: each entry's expected tools fire, its class is the
// expected one, and the good kernels stay quiet (the confusion matrix of
// tests/profile_zoo/confusion.py, as a test, then confusion.py itself on the
// replayed results). An entry without a recording fails: the zoo is evidence
// only where it was measured.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct Replayed {
  std::string cls;
  std::set<std::string> fired;  ///< warning or critical
  std::map<std::string, std::string>
      advice;  ///< tool -> its advice (the last one, if it fired twice)
  Json json;
};

Replayed Replay(const fs::path& dir, const fs::path& out_dir = testing::ScratchDir("zoo-replay")) {
  fs::path out = out_dir / (dir.filename().string() + ".json");
  ProcessOptions o;
  o.timeout_s = 60;
  ProcessResult r =
      RunProcess({KOPT_BINARY, "profile", "--replay", dir.string(), "--json", out.string()}, o);
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
  // The call's class (expected.json's expect_class); a one-kernel call is
  // judged by its kernel's class, as confusion.py does.
  if (res.cls != "launch_host" && rep["kernels"].size() == 1)
    res.cls = rep["kernels"][0]["roofline"].value("bound", "");
  return res;
}

TEST(ProfileZooReplay, EveryRecordedEntryIsDiagnosedAsExpected) {
  fs::path src = testing::SourceDir();
  Json expected = ReadJsonFile(src / "tests/profile_zoo/expected.json");
  fs::path out_dir = testing::ScratchDir("zoo-replay-all");
  int false_alarms = 0;
  for (const auto& e : expected) {
    std::string name = e.value("name", "");
    // When the expectation was registered, relative to the recording
    // (tests/profile_zoo/registration.py reads it from git history).
    std::string registered = e.value("registered", "");
    EXPECT_TRUE(registered == "before_recording" || registered == "after_recording")
        << name << ": registered is \"" << registered << "\"";
    fs::path dir = src / "tests/data/profile_zoo" / name;
    if (!fs::exists(dir / "profile.json")) {
      ADD_FAILURE() << name << " has no recording under tests/data/profile_zoo/" << name
                    << ": record it on a GPU (tests/profile_zoo/run.sh) or remove the entry";
      continue;
    }
    Replayed r = Replay(dir, out_dir);
    std::set<std::string> classes = {e.value("expect_class", "")};
    for (const auto& c : e.value("alt_classes", Json::array()))
      classes.insert(c.get<std::string>());
    EXPECT_TRUE(classes.count(r.cls)) << name << ": class " << r.cls;
    std::set<std::string> want;
    for (const auto& t : e.value("expect_tools", Json::array())) want.insert(t.get<std::string>());
    // Secondary findings predicted before recording are tolerated on flawed
    // kernels only; a good kernel must be quiet.
    std::set<std::string> tolerated;
    if (!e.value("good", false) && e.contains("may_also_fire") && e["may_also_fire"].is_array())
      for (const auto& t : e["may_also_fire"]) tolerated.insert(t.get<std::string>());
    for (const auto& t : want)
      EXPECT_TRUE(r.fired.count(t)) << name << ": " << t << " did not fire";
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
  EXPECT_EQ(false_alarms, 0);

  // The confusion matrix as the GPU run prints it, on the replayed results:
  // clean, and counted apart for expectations registered before and after
  // their recording.
  const char* python = std::getenv("KOPT_PYTHON");
  ProcessResult c = RunProcess(
      {python && *python ? python : "python3", (src / "tests/profile_zoo/confusion.py").string(),
       (src / "tests/profile_zoo/expected.json").string(), out_dir.string()});
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_NE(c.out.find(fmt::format(
                "{} entries: 0 miss(es), 0 false alarm(s), 0 misclassified, 0 without a result",
                expected.size())),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("registered before recording (predictions): "), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("registered after recording (written knowing the result): "),
            std::string::npos)
      << c.out;
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
