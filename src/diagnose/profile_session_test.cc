// The tier orchestration of kopt profile, driven by a fake Profiler that
// answers with the ncu recording from the H200 (tests/data/ncu).
#include "diagnose/profile_session.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

class FakeProfiler : public Profiler {
 public:
  std::vector<std::vector<std::string>> ncu_calls;
  std::vector<ProfileTarget> timeline_calls;
  bool fail_tier1 = false, fail_tier2 = false;
  Json timeline = Json{{"host_ms", 0.75}, {"kernel_launches_per_call", 10}};

  std::vector<int> ncu_max_launches;
  NcuRun Ncu(const ProfileTarget& t, const std::vector<std::string>& metrics) override {
    ncu_calls.push_back(metrics);
    ncu_max_launches.push_back(t.max_launches);
    NcuRun r;
    r.metrics = metrics;
    r.seconds = 1.5;
    if ((ncu_calls.size() == 1 && fail_tier1) || (ncu_calls.size() == 2 && fail_tier2)) {
      r.error = "ncu on the candidate failed (exit 1): ERR_NVGPUCTRPERM";
      return r;
    }
    r.csv = ReadTextFile(testing::SourceDir() / "tests/data/ncu/h200_raw_page.csv");
    r.report = ParseNcuCsv(r.csv);
    r.ok = true;
    return r;
  }
  std::vector<std::string> source_calls;
  NcuRun Source(const ProfileTarget&, const std::string& kernel) override {
    source_calls.push_back(kernel);
    NcuRun r;
    r.ok = true;
    r.seconds = 4;
    r.csv = kSourcePage;
    return r;
  }
  // The layout of `ncu --page source --csv --print-source sass` as documented;
  // HAND-WRITTEN until a GPU session records one (tests/data/ncu/README.md).
  static constexpr const char* kSourcePage =
      "==PROF== Connected to process 1\n"
      "\"# Address\",\"Source\",\"Warp Stall Sampling (All Samples)\",\"Warp Stall Sampling (Not-issued "
      "Samples)\",\"Instructions Executed\"\n"
      "\"0x7f0\",\"LDG.E.128 R4, desc[UR4][R2.64]\",\"1,200\",\"1,100\",\"65,536\"\n"
      "\"0x800\",\"FMUL R4, R4, 2\",\"40\",\"10\",\"65,536\"\n"
      "\"0x810\",\"STG.E.128 desc[UR4][R6.64], R4\",\"300\",\"250\",\"65,536\"\n";

  TimelineRun Timeline(const ProfileTarget& t) override {
    timeline_calls.push_back(t);
    TimelineRun r;
    r.ok = true;
    r.timeline = timeline;
    r.seconds = 2.5;
    return r;
  }
};

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

fs::path DataDir() { return testing::SourceDir() / "data/diagnose"; }

TEST(ProfileTiers, Tier2AsksForTheSetsOfTheClassesTier1Found) {
  FakeProfiler p;
  ProfileTarget target;
  ProfileData d;
  RunProfileTiers(p, target, {}, TierOptions{}, DataDir(), &d);
  TierMetrics tiers = LoadTierMetrics(DataDir() / "tiers.json");
  ASSERT_EQ(p.ncu_calls.size(), 2u);
  EXPECT_EQ(p.ncu_calls[0], tiers.tier1);
  const auto& two = p.ncu_calls[1];
  // The recording holds latency-, L1/shared-, L2-, DRAM-bound and small-grid kernels.
  EXPECT_TRUE(Contains(two, metric::kSharedLdConflicts));
  EXPECT_TRUE(Contains(two, std::string(metric::kStallPrefix) + "long_scoreboard" + metric::kStallSuffix));
  EXPECT_TRUE(Contains(two, metric::kGlobalStSectors));
  for (const auto& m : two) EXPECT_FALSE(Contains(tiers.tier1, m)) << m;
  EXPECT_FALSE(d.ncu_tier2.empty());
  EXPECT_EQ(d.tier_seconds.at("ncu tier 1"), 1.5);
  EXPECT_EQ(d.tier_seconds.at("ncu tier 2"), 1.5);
  // Ten launches in one call: the timeline runs, over at least 20 calls.
  ASSERT_EQ(p.timeline_calls.size(), 1u);
  EXPECT_GE(p.timeline_calls[0].calls, 20);
  EXPECT_EQ(d.tier_seconds.at("timeline"), 2.5);
  EXPECT_EQ(d.context.host_ms, 0);  // a cuda candidate's host clock is kopt's, not its own
  // With no object to disassemble, the static tier says so.
  EXPECT_TRUE(std::any_of(d.notes.begin(), d.notes.end(),
                          [](const std::string& n) { return n.find("disassemble") != std::string::npos; }));
}

TEST(ProfileTiers, OnePassAsksOnceForEverything) {
  FakeProfiler p;
  TierOptions o;
  o.one_pass = true;
  o.timeline = "off";
  ProfileData d;
  RunProfileTiers(p, ProfileTarget{}, {}, o, DataDir(), &d);
  ASSERT_EQ(p.ncu_calls.size(), 1u);
  for (const auto& m : KoptNcuMetrics()) EXPECT_TRUE(Contains(p.ncu_calls[0], m)) << m;
  EXPECT_TRUE(p.timeline_calls.empty());
  EXPECT_TRUE(d.ncu_tier2.empty());
  EXPECT_TRUE(d.tier_seconds.count("ncu one pass"));
}

TEST(ProfileTiers, HybridsGetTheTimelinesHostTime) {
  FakeProfiler p;
  TierOptions o;
  o.tier = 1;
  o.hybrid = true;
  ProfileData d;
  d.context.host_ms = 9;
  RunProfileTiers(p, ProfileTarget{}, {}, o, DataDir(), &d);
  EXPECT_EQ(p.ncu_calls.size(), 1u);  // tier 1 only
  EXPECT_EQ(d.context.host_ms, 0.75);

  // The timeline's synchronisations reach the call-level tools: kernels run
  // 4.2 ms of a 20 ms call, and the host synchronised three times.
  FakeProfiler q;
  q.timeline = Json{{"host_ms", 20.5}, {"syncs_per_call", 3}, {"copies_per_call", 2}, {"gap_ms_per_call", 15.0}};
  ProfileData e;
  e.context.time_ms = 20;
  e.context.device.sm_count = 132;
  RunProfileTiers(q, ProfileTarget{}, {}, o, DataDir(), &e);
  DiagnosisReport r = DiagnoseProfileData(e, DataDir());
  EXPECT_EQ(r.call.bound, BoundClass::kLaunchHost);
  auto host = std::find_if(r.call_diagnoses.begin(), r.call_diagnoses.end(),
                           [](const Diagnosis& x) { return x.tool == "host_overhead"; });
  ASSERT_NE(host, r.call_diagnoses.end());
  EXPECT_EQ(host->evidence.at("syncs_per_call"), 3);
  auto many = std::find_if(r.call_diagnoses.begin(), r.call_diagnoses.end(),
                           [](const Diagnosis& x) { return x.tool == "many_small_kernels"; });
  if (many != r.call_diagnoses.end()) EXPECT_EQ(many->evidence.at("gap_ms_per_call"), 15.0);
}

TEST(ProfileTiers, LaunchesBeyondNcusCapAreCountedByTheTimeline) {
  // ncu stops at ten launches per call (the recording holds ten); the
  // timeline saw 32 launches and three times the kernel time.
  FakeProfiler p;
  ProfileData d;
  d.context.ceilings.bandwidth_bytes_per_s = 4.0e12;
  RunProfileTiers(p, ProfileTarget{}, {}, TierOptions{}, DataDir(), &d);
  ASSERT_EQ(p.ncu_max_launches.size(), 2u);
  EXPECT_EQ(p.ncu_max_launches[0], 10);
  EXPECT_EQ(p.ncu_max_launches[1], 10);  // tier 2 looks at the same launches
  DiagnosisReport seen = DiagnoseProfileData(d, DataDir());
  double ncu_ms = 0;
  for (const auto& k : seen.kernels) ncu_ms += k.mean_ms * k.launches;
  ASSERT_GT(ncu_ms, 0);
  d.timeline = Json{{"kernel_launches_per_call", 32}, {"kernel_ms_per_call", 3 * ncu_ms}};
  DiagnosisReport all = DiagnoseProfileData(d, DataDir());
  // The unseen launches move bytes at the seen ones' rate: three times the
  // kernel time, three times the DRAM bytes behind the call's floor.
  ASSERT_GT(seen.call.floor_ms, 0);
  EXPECT_NEAR(all.call.floor_ms, 3 * seen.call.floor_ms, 1e-6 * seen.call.floor_ms);
  EXPECT_TRUE(std::any_of(all.notes.begin(), all.notes.end(), [](const std::string& n) {
    return n.find("ncu profiled 10 of the call's 32 kernel launches") != std::string::npos;
  }));
  // Told not to run the timeline, kopt says the call's figures are partial.
  FakeProfiler q;
  TierOptions off;
  off.timeline = "off";
  ProfileData e;
  RunProfileTiers(q, ProfileTarget{}, {}, off, DataDir(), &e);
  EXPECT_TRUE(std::any_of(e.notes.begin(), e.notes.end(), [](const std::string& n) {
    return n.find("ncu stopped after 10 launches") != std::string::npos;
  }));
}

TEST(ProfileTiers, Tier1FailureIsAnErrorLaterFailuresAreNotes) {
  FakeProfiler p;
  p.fail_tier1 = true;
  ProfileData d;
  EXPECT_THROW(RunProfileTiers(p, ProfileTarget{}, {}, TierOptions{}, DataDir(), &d), Error);

  FakeProfiler q;
  q.fail_tier2 = true;
  ProfileData e;
  RunProfileTiers(q, ProfileTarget{}, {}, TierOptions{}, DataDir(), &e);
  EXPECT_TRUE(e.ncu_tier2.empty());
  EXPECT_TRUE(std::any_of(e.notes.begin(), e.notes.end(),
                          [](const std::string& n) { return n.rfind("ncu tier 2:", 0) == 0; }));
}

TEST(ProfileTiers, SourceCountersOfTheKernelTakingTheMostTime) {
  FakeProfiler p;
  TierOptions o;
  o.tier = 1;
  o.timeline = "off";
  o.source = true;
  ProfileData d;
  RunProfileTiers(p, ProfileTarget{}, {}, o, DataDir(), &d);
  ASSERT_EQ(p.source_calls.size(), 1u);
  EXPECT_EQ(p.source_calls[0], "^register_spill");  // 2.34 ms of the recording's 4.2
  EXPECT_EQ(d.tier_seconds.at("ncu source"), 4);
  SourceHotspots h = ParseSourcePage(d.ncu_source, 2);
  ASSERT_TRUE(h.error.empty()) << h.error;
  EXPECT_EQ(h.total_samples, 1540);
  ASSERT_EQ(h.top.size(), 2u);
  EXPECT_EQ(h.top[0].source, "LDG.E.128 R4, desc[UR4][R2.64]");
  EXPECT_EQ(h.top[0].executed, 65536);
  EXPECT_EQ(h.top[1].address, "0x810");
  EXPECT_EQ(h.stall_column, "Warp Stall Sampling (All Samples)");
  Json j = ToJson(d, DiagnoseProfileData(d, DataDir()));
  EXPECT_EQ(j["hotspots"]["top"].size(), 3u);
  EXPECT_FALSE(ParseSourcePage("no table here").error.empty());
}

TEST(ProfileTiers, SaveThenLoadThenDiagnoseIsTheSame) {
  FakeProfiler p;
  ProfileData d;
  d.task_name = "fixtures";
  d.context.device.sm_count = 132;
  d.context.ceilings.bandwidth_bytes_per_s = 4.67e12;
  d.context.time_ms = 4.2;
  RunProfileTiers(p, ProfileTarget{}, {}, TierOptions{}, DataDir(), &d);
  fs::path dir = testing::ScratchDir("profile-session");
  SaveProfile(d, dir);
  ProfileData back = LoadProfile(dir);
  EXPECT_EQ(back.task_name, "fixtures");
  EXPECT_EQ(back.context.device.sm_count, 132);
  EXPECT_EQ(back.ncu_tier1, d.ncu_tier1);
  EXPECT_EQ(ToJson(DiagnoseProfileData(back, DataDir())), ToJson(DiagnoseProfileData(d, DataDir())));
  EXPECT_THROW(LoadProfile(dir / "nothing"), Error);
}

}  // namespace
}  // namespace kopt
