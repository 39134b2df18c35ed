// The defences against a search that attacks the harness, end to end through
// the kopt binary on the CPU worker (docs/verification.md): extra input
// distributions, timed calls judged after the fact, and the reference checked
// in a clean process.
#include <map>

#include <gtest/gtest.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "testing/paths.h"

namespace kopt {
namespace {

ProcessResult Kopt(std::vector<std::string> args) {
  args.insert(args.begin(), KOPT_BINARY);
  ProcessOptions o;
  o.timeout_s = 400;
  o.env["KOPT_CACHE"] = testing::ScratchDir("trust-cli-cache").string();
  return RunProcess(args, o);
}

std::string PyData(const std::string& f) { return (testing::SourceDir() / "python/tests/data" / f).string(); }

std::string Reasons(const Json& record) { return record["outcome"].value("reasons", Json::array()).dump(); }

TEST(TrustCli, EachNewDefenceRejectsItsCheatAndTheHonestKernelPasses) {
  auto json = (testing::ScratchDir("trust-cli") / "eval.json").string();
  ProcessResult r = Kopt({"eval", PyData("relu_rand.py"), PyData("relu_ok_any.py"), PyData("adv_relu_identity.py"),
                          PyData("adv_timed_stack.py"), PyData("adv_patch_reference.py"),
                          PyData("adv_slow_reference.py"), "--device", "cpu", "--max-seconds", "0.3",
                          "--timed-checks", "0.5", "--json", json});
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // some candidates are incorrect
  EXPECT_NE(r.out.find("inputs     checked on the task's inputs, signed, wide"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the reference and baselines were checked in a clean process"), std::string::npos) << r.out;
  Json j = ReadJsonFile(json);
  ASSERT_EQ(j["records"].size(), 5u) << r.out << r.err;
  const Json& honest = j["records"][0];
  EXPECT_EQ(honest["outcome"]["verdict"], "measured") << honest["outcome"].dump(2);
  EXPECT_EQ(honest["trust"]["distributions_checked"], Json({"signed", "wide"}));
  EXPECT_TRUE(honest["trust"]["clean_reference"].get<bool>());
  EXPECT_TRUE(honest["outcome"].contains("clean_eager_ms"));
  EXPECT_NE(honest["outcome"]["notes"].dump().find("chosen at random after they ran"), std::string::npos);

  const Json& identity = j["records"][1];
  EXPECT_EQ(identity["outcome"]["verdict"], "incorrect");
  EXPECT_NE(Reasons(identity).find("on signed inputs"), std::string::npos) << Reasons(identity);
  EXPECT_NE(Reasons(identity).find("right only on get_inputs()'s distribution"), std::string::npos);

  const Json& timed = j["records"][2];
  EXPECT_EQ(timed["outcome"]["verdict"], "incorrect");
  EXPECT_NE(Reasons(timed).find("chosen at random after they ran"), std::string::npos) << Reasons(timed);

  const Json& patched = j["records"][3];
  EXPECT_EQ(patched["outcome"]["verdict"], "incorrect");
  EXPECT_NE(Reasons(patched).find("differs from a clean process"), std::string::npos) << Reasons(patched);

  const Json& slowed = j["records"][4];
  EXPECT_EQ(slowed["outcome"]["verdict"], "incorrect");
  EXPECT_NE(Reasons(slowed).find("slower beside the candidate"), std::string::npos) << Reasons(slowed);
}

TEST(TrustCli, AContractNarrowsTheDistributionsAndTheReportSaysWhy) {
  auto json = (testing::ScratchDir("trust-cli-dist") / "eval.json").string();
  // log(x + 1e-3) is not defined on signed inputs: skipped, and said why.
  ProcessResult r = Kopt({"eval", PyData("log_rand.py"), PyData("log_ok.py"), "--device", "cpu", "--max-seconds",
                          "0.2", "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("not signed: the reference is not finite there"), std::string::npos) << r.out;
  // --distributions none: the identity ReLU passes (the contract says the
  // task is defined on its own inputs only), and the record says so.
  r = Kopt({"eval", PyData("relu_rand.py"), PyData("adv_relu_identity.py"), "--distributions", "none", "--device",
            "cpu", "--max-seconds", "0.2", "--json", json});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  Json j = ReadJsonFile(json);
  EXPECT_EQ(j["records"][0]["trust"]["distributions_checked"], Json::array());
  EXPECT_EQ(j["records"][0]["contract"]["distributions"], Json::array());
  EXPECT_NE(r.out.find("input distributions: the task's only"), std::string::npos) << r.out;
  r = Kopt({"eval", PyData("relu_rand.py"), PyData("adv_relu_identity.py"), "--distributions", "bogus", "--device",
            "cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not an input distribution kopt knows"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kopt
