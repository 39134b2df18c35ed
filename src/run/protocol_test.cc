// The typed worker replies: lenient parsing, older replies, round trips.
#include <gtest/gtest.h>

#include <filesystem>

#include "run/protocol.h"
#include "run/verdict.h"
#include "run/worker_channel.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

TEST(Protocol, MissingAndIllTypedFieldsAreEmptyNotACrash) {
  for (const Json& j : {Json(), Json::object(), Json::array(), Json(3), Json("x")}) {
    EXPECT_TRUE(ParseEvaluateReply(j).checks.empty());
    EXPECT_TRUE(ParseTimeReply(j).samples.empty());
    EXPECT_TRUE(ParseReferenceReply(j).checks.empty());
    EXPECT_TRUE(ParseCaptureReply(j).outputs.empty());
    EXPECT_TRUE(ParseCeilingsReply(j).bandwidth.empty());
    EXPECT_FALSE(ParseHelloReply(j).sandbox.has_value());
  }
  OutputCheck o = ParseOutputCheck(Json{{"shape", nullptr}, {"dtype", nullptr}, {"shape_ok", false},
                                        {"vs_ref32", nullptr}, {"nan", "many"}, {"vs_ref64", {{"rel_l2", 1e-3}}}});
  EXPECT_FALSE(o.shape.has_value());
  EXPECT_FALSE(o.dtype.has_value());
  EXPECT_FALSE(o.vs_ref32.has_value());
  EXPECT_EQ(o.nan, 0);
  ASSERT_TRUE(o.vs_ref64.has_value());
  EXPECT_DOUBLE_EQ(*o.vs_ref64->rel_l2, 1e-3);
  EXPECT_FALSE(o.vs_ref64->max_abs.has_value());  // a missing statistic stays missing
  EXPECT_FALSE(o.exact_tensor.has_value());       // an older worker: not measured
}

TEST(Protocol, EvaluateReplyFields) {
  Json reply{{"ok", true},
             {"checks",
              {{{"seed", 11},
                {"order", "candidate_first"},
                {"distribution", "signed"},
                {"inputs_mutated", true},
                {"mutated_inputs", {"x"}},
                {"second_shape", {{"batch_size", 17}}},
                {"input_fp", {{{"type", "int"}}, {{"shape", {4}}, {"dtype", "float32"}, {"sum", 2.5}}}},
                {"outputs", {{{"shape", {4}}, {"shape_ok", true}, {"dtype_ok", true}, {"poison_left", 3}}}}}}},
             {"torch_ops", {{"candidate", {{"aten::relu", 2}}}, {"reference", {{"aten::relu", 1}}}}},
             {"tampered", {"time.perf_counter", 7}},
             {"load_ms", 12.5}};
  EvaluateReply r = ParseEvaluateReply(reply);
  ASSERT_EQ(r.checks.size(), 1u);
  const EvaluateCheck& c = r.checks[0];
  EXPECT_EQ(*c.seed, 11);
  EXPECT_EQ(c.distribution, "signed");
  EXPECT_TRUE(c.inputs_mutated);
  EXPECT_EQ(c.second_shape->at("batch_size"), 17);
  ASSERT_TRUE(c.input_fp.has_value());
  EXPECT_EQ(*(*c.input_fp)[0].type, "int");
  EXPECT_DOUBLE_EQ((*c.input_fp)[1].sum, 2.5);
  EXPECT_FALSE(c.ref_fp.has_value());  // not fingerprinted
  EXPECT_EQ(c.outputs.at(0).poison_left, 3);
  EXPECT_EQ(r.torch_ops->candidate.at("aten::relu"), 2);
  EXPECT_EQ(*r.tampered, (std::vector<std::string>{"time.perf_counter", "7"}));
  EXPECT_DOUBLE_EQ(*r.load_ms, 12.5);
  // Without these fields (older workers) nothing is claimed.
  EvaluateReply old = ParseEvaluateReply(Json{{"checks", {{{"seed", 11}, {"outputs", Json::array()}}}}});
  EXPECT_EQ(old.checks[0].distribution, "task");
  EXPECT_FALSE(old.tampered.has_value());
  EXPECT_FALSE(old.torch_ops.has_value());
}

TEST(Protocol, TimeReplyFields) {
  Json reply{{"samples",
              {{"candidate", {{"event_ms", {1.0, "x", 2.0}}, {"host_ms", {1.1, 2.1}}}},
               {"compile", {{"event_ms", Json::array()}, {"host_ms", Json::array()}, {"error", "no compile"},
                            {"error_kind", "candidate_error"}}}}},
             {"null_host_ms", {0.01}},
             {"energy", {{"candidate", {{"mj_per_call", 3.5}, {"calls", 100}, {"window_s", 0.6}}}, {"eager", nullptr}}},
             {"timed_checks",
              {{"p", 0.05},
               {"suspicious", nullptr},
               {"contenders", {{"candidate", {{"calls", 40}, {"checks", {{{"call", 9}, {"outputs", Json::array()}}}}}}}}}},
             {"meta", {{"stop", "ci"}, {"rounds", 7}, {"clock", "event"}}}};
  TimeReply r = ParseTimeReply(reply);
  EXPECT_EQ(r.samples.at("candidate").event_ms, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(*r.samples.at("compile").error, "no compile");
  EXPECT_EQ(r.samples.at("compile").error_kind, "candidate_error");
  EXPECT_DOUBLE_EQ(*r.energy->at("candidate")->mj_per_call, 3.5);
  EXPECT_FALSE(r.energy->at("eager").has_value());
  EXPECT_FALSE(r.timed_checks->suspicious.has_value());
  EXPECT_EQ(r.timed_checks->contenders.at("candidate").checks.at(0).call, 9);
  EXPECT_EQ(r.meta.stop, "ci");
  EXPECT_EQ(r.meta.rounds, 7);
  EXPECT_FALSE(r.timing_audit.has_value());
  EXPECT_FALSE(r.ref_probe.has_value());
}

TEST(Protocol, HelloAndSandbox) {
  HelloReply h = ParseHelloReply(Json{{"torch", "2.5.1"},
                                      {"cuda", nullptr},
                                      {"device", {{"name", "cpu"}, {"cc", {0, 0}}, {"available", false}}},
                                      {"sandbox", {{"network", "isolated"}, {"writable", {"/tmp/s"}}}}});
  EXPECT_EQ(h.device.torch_version, "2.5.1");
  EXPECT_EQ(h.device.name, "cpu");
  EXPECT_EQ(h.cuda, "");
  ASSERT_TRUE(h.sandbox.has_value());
  EXPECT_EQ(*h.sandbox->network, "isolated");
  EXPECT_FALSE(h.sandbox->filesystem.has_value());
  EXPECT_EQ(ParseSandboxReport(ToJson(*h.sandbox)).writable, h.sandbox->writable);
  EXPECT_NE(SandboxShortfall(ToJson(*h.sandbox)).find("writes not confined (not reported)"), std::string::npos);
}

TEST(Protocol, CeilingsRoundTrip) {
  Json reply{{"bandwidth", {{{"probe", "copy_"}, {"bytes_per_s", 4.3e12}, {"tensor_bytes", 1 << 30}},
                            {{"probe", "vec_copy"}, {"bytes_per_s", nullptr}, {"error", "no nvcc"}}}},
             {"matmul", {{{"probe", "bf16"}, {"dtype", "bfloat16"}, {"flops_per_s", 7.9e14}, {"n", 8192}}}}};
  CeilingsReply r = ParseCeilingsReply(reply);
  EXPECT_FALSE(r.bandwidth[1].bytes_per_s.has_value());
  EXPECT_EQ(r.bandwidth[1].error, "no nvcc");
  EXPECT_EQ(ToJson(r), reply);
}

// The clean process's facts are written into each record (EvalRecord::clean)
// and read back when it is judged again: every field survives the trip.
TEST(Protocol, CleanFactsRoundTrip) {
  Json fp{{"shape", {4}}, {"dtype", "float32"}, {"numel", 4}, {"nan", 0},        {"inf", 0},
          {"sum", 2.0},   {"abs_sum", 3.0},     {"sq_sum", 4.0}, {"samples", {1.0, -1.0}}};
  Json reference{{"checks",
                  {{{"seed", 11}, {"distribution", "task"}, {"input_fp", {fp, {{"type", "int"}}}}, {"ref_fp", {fp}},
                    {"ref64_fp", {fp}}, {"ref_error", {{{"max_abs", 1e-6}, {"rel_l2", 1e-8}, {"ref64_max_abs", 3.0}}}},
                    {"finite", true}},
                   {{"seed", 11}, {"distribution", "task"}, {"second_shape", {{"batch_size", 17}}},
                    {"input_fp", {fp}}, {"ref_fp", {fp}}, {"ref64_fp", nullptr}, {"ref_error", nullptr},
                    {"finite", false}}}}};
  CleanFacts clean;
  clean.reference = ParseReferenceReply(reference);
  clean.eager_ms = Summarize({1.0, 1.1, 1.2});
  CleanFacts again = CleanFactsFromJson(ToJson(clean));
  EXPECT_EQ(ToJson(again), ToJson(clean));
  EXPECT_EQ(ToJson(again.reference), ToJson(ParseReferenceReply(reference)));
  const ReferenceCheck& c = again.reference.checks.at(0);
  EXPECT_EQ(*c.seed, 11);
  EXPECT_EQ(*(*c.input_fp)[1].type, "int");
  EXPECT_DOUBLE_EQ(*(*c.ref_error)[0]->rel_l2, 1e-8);
  EXPECT_TRUE(c.finite);
  EXPECT_EQ(again.reference.checks.at(1).second_shape->at("batch_size"), 17);
  EXPECT_FALSE(again.reference.checks.at(1).ref64_fp.has_value());
  EXPECT_FALSE(again.reference.checks.at(1).ref_error.has_value());
  EXPECT_EQ(FingerprintDifference((*c.ref_fp)[0], ParseFingerprint(fp), 0), "");
}

// Every worker reply recorded on the H200 parses into what the verdict
// reads: checks with outputs, candidate samples on the event clock.
TEST(Protocol, RecordedRepliesParse) {
  fs::path dir = testing::SourceDir() / "tests/data/gpu/adversarial";
  int parsed = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    Json j = ReadJsonFile(entry.path());
    const Json& rec = j["records"][0];
    if (!rec.contains("checks")) continue;
    EvaluateReply ev = ParseEvaluateReply(rec["checks"]);
    ASSERT_FALSE(ev.checks.empty()) << entry.path();
    EXPECT_EQ(ev.checks[0].outputs.size(), rec["checks"]["checks"][0]["outputs"].size()) << entry.path();
    if (rec.contains("timing") && rec["timing"].is_object()) {
      TimeReply t = ParseTimeReply(rec["timing"]);
      ASSERT_TRUE(t.samples.count("candidate")) << entry.path();
      EXPECT_EQ(t.samples.at("candidate").event_ms.size(), rec["timing"]["samples"]["candidate"]["event_ms"].size())
          << entry.path();
    }
    ++parsed;
  }
  EXPECT_GE(parsed, 28);
}

}  // namespace
}  // namespace kopt
