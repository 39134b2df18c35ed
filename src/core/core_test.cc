#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/outcome.h"
#include "core/stats.h"
#include "core/subprocess.h"
#include "testing/paths.h"

namespace kopt {
namespace {

TEST(Hash, StableAndPartAware) {
  EXPECT_EQ(ContentHash({"abc"}), ContentHash({"abc"}));
  EXPECT_NE(ContentHash({"ab", "c"}), ContentHash({"a", "bc"}));
  EXPECT_EQ(ContentHash({"x"}).size(), 32u);
}

TEST(Stats, MedianAndInterval) {
  std::vector<double> v;
  for (int i = 1; i <= 101; ++i) v.push_back(i);
  SampleSummary s = Summarize(v);
  EXPECT_EQ(s.n, 101);
  EXPECT_DOUBLE_EQ(s.median, 51);
  EXPECT_LT(s.ci_low, 51);
  EXPECT_GT(s.ci_high, 51);
  EXPECT_GE(s.ci_low, 40);
  EXPECT_LE(s.ci_high, 62);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Summarize({}).n, 0);
}

// The same cases python/tests/test_units.py checks against kopt/timing.py,
// the rule's mirror: the two sides cannot drift apart.
TEST(Stats, IntervalsMatchTheSharedFixture) {
  Json doc = ReadJsonFile(testing::SourceDir() / "tests/data/stats/intervals.json");
  ASSERT_FALSE(doc["cases"].empty());
  for (const auto& c : doc["cases"]) {
    std::vector<double> samples = c["samples"].get<std::vector<double>>();
    SampleSummary s = Summarize(samples);
    EXPECT_EQ(s.median, c["median"].get<double>()) << c["name"];
    EXPECT_EQ(s.ci_low, c["low"].get<double>()) << c["name"];
    EXPECT_EQ(s.ci_high, c["high"].get<double>()) << c["name"];
  }
}

TEST(Subprocess, CapturesOutputAndExitCode) {
  ProcessResult r = RunProcess({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.ok());
}

TEST(Subprocess, KillsWholeProcessGroupAtDeadline) {
  auto dir = testing::ScratchDir("subprocess");
  auto marker = dir / "grandchild-alive";
  // The grandchild would touch the marker after 2 s if it survived the kill.
  ProcessOptions opt;
  opt.timeout_s = 0.5;
  ProcessResult r =
      RunProcess({"sh", "-c", "(sleep 2; touch " + marker.string() + ") & sleep 30"}, opt);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_s, 5);
  ::sleep(3);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(Subprocess, MissingProgramIsSpawnFailure) {
  ProcessResult r = RunProcess({"kopt-no-such-program-xyz"});
  EXPECT_TRUE(r.spawn_failed);
}

TEST(LineChild, LinesTimeoutAndKill) {
  LineChild child;
  ASSERT_TRUE(
      child.Start({"sh", "-c", "echo ready; read x; echo got-$x; echo oops >&2; sleep 30"}, {}));
  std::string line;
  auto soon = [] { return std::chrono::steady_clock::now() + std::chrono::seconds(5); };
  ASSERT_EQ(child.ReadLine(&line, soon()), LineChild::ReadStatus::kLine);
  EXPECT_EQ(line, "ready");
  ASSERT_TRUE(child.WriteLine("42"));
  ASSERT_EQ(child.ReadLine(&line, soon()), LineChild::ReadStatus::kLine);
  EXPECT_EQ(line, "got-42");
  auto short_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  EXPECT_EQ(child.ReadLine(&line, short_deadline), LineChild::ReadStatus::kTimeout);
  EXPECT_TRUE(child.Running());
  child.Kill();
  EXPECT_FALSE(child.Running());
  EXPECT_NE(child.StderrTail().find("oops"), std::string::npos);
}

TEST(Json, AtomicWriteRoundTrip) {
  auto dir = testing::ScratchDir("json");
  Json j{{"a", 1}, {"b", {1, 2, 3}}};
  WriteJsonFileAtomic(dir / "sub" / "x.json", j);
  EXPECT_EQ(ReadJsonFile(dir / "sub" / "x.json"), j);
  EXPECT_THROW(ReadJsonFile(dir / "missing.json"), Error);
}

// Two threads of one process writing the same file: each write has its own
// temporary file, so neither fails and the file always holds one whole value.
TEST(Json, AtomicWritesFromTwoThreads) {
  auto dir = testing::ScratchDir("json-threads");
  const auto file = dir / "x.json";
  const Json a{{"who", "a"}, {"pad", std::string(64 * 1024, 'a')}};
  const Json b{{"who", "b"}, {"pad", std::string(64 * 1024, 'b')}};
  std::atomic<int> failures{0};
  auto writer = [&](const Json& value) {
    for (int i = 0; i < 50; ++i) {
      try {
        WriteJsonFileAtomic(file, value);
      } catch (const Error&) {
        ++failures;
      }
    }
  };
  std::thread ta(writer, a), tb(writer, b);
  ta.join();
  tb.join();
  EXPECT_EQ(failures.load(), 0);
  Json got = ReadJsonFile(file);
  EXPECT_TRUE(got == a || got == b);
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename(), "x.json") << "left behind: " << e.path();
}

TEST(Outcome, JsonCarriesVerdictAndReason) {
  Outcome o = Incorrect{{"output 0 differs: max abs error 3.2"}};
  Json j = ToJson(o);
  EXPECT_EQ(j["verdict"], "incorrect");
  EXPECT_EQ(j["reasons"][0], "output 0 differs: max abs error 3.2");
  Measured m;
  m.time_ms = Summarize({1.0, 1.0, 1.0});
  m.eager_ms = Summarize({2.0, 2.0, 2.0});
  EXPECT_DOUBLE_EQ(*m.SpeedupVsEager(), 2.0);
  EXPECT_EQ(OutcomeName(Outcome{m}), "measured");
}

// A failed build's one line names why, not ptxas' first chatter.
TEST(Outcome, BuildFailureLineSaysWhy) {
  EXPECT_EQ(OutcomeLine(BuildFailed{
                "ptxas info    : 0 bytes gmem\nkopt: the shared object defines no kopt_forward\n"}),
            "build failed: kopt: the shared object defines no kopt_forward");
  EXPECT_EQ(BuildFailureReason(
                "nvcc warning : x\ncandidate.cu(2): error: expected a \")\"\nkopt: nvcc failed\n"),
            "candidate.cu(2): error: expected a \")\"");
  EXPECT_EQ(BuildFailureReason("just one line"), "just one line");
}

}  // namespace
}  // namespace kopt
