#include <gtest/gtest.h>

#include "run/verdict.h"

namespace kopt {
namespace {

TaskBundle OneOutput(const std::string& dtype = "float32") {
  TaskBundle b;
  b.outputs.push_back(TensorSpec{"out0", "output", dtype, {1024}, {1}});
  b.floor_ms = 0.01;
  b.hard_floor_ms = 0.01;
  b.floor_bound = "memory";
  b.min_bytes = 8192;
  return b;
}

// An output entry as the worker reports it; `cand_rel` is the candidate's
// relative error against float64, `ref_rel` the fp32 reference's own.
Json Out(double cand_rel, double ref_rel, double worst_ratio = 0.5) {
  return Json{
      {"shape", {1024}},
      {"dtype", "float32"},
      {"shape_ok", true},
      {"dtype_ok", true},
      {"nan", 0},
      {"inf", 0},
      {"poison_left", 0},
      {"aliases_input", false},
      {"vs_ref32", {{"max_abs", cand_rel * 3}, {"rel_l2", cand_rel}, {"worst_ratio", worst_ratio}}},
      {"vs_ref64", {{"max_abs", cand_rel * 3}, {"rel_l2", cand_rel}}},
      {"ref32_vs_ref64", {{"max_abs", ref_rel * 3}, {"rel_l2", ref_rel}}},
      {"ref_max_abs", 3.0}};
}

Json Reply(const Json& out, bool mutated = false) {
  return Json{{"checks",
               {{{"seed", 11},
                 {"order", "candidate_first"},
                 {"inputs_mutated", mutated},
                 {"outputs", {out}}},
                {{"seed", 12},
                 {"order", "reference_first"},
                 {"inputs_mutated", mutated},
                 {"outputs", {out}}}}}};
}

TEST(Verdict, AccurateCandidatePasses) {
  EXPECT_TRUE(JudgeChecks(Reply(Out(2e-8, 3e-8)), OneOutput(), {}).empty());
}

TEST(Verdict, StateTheForwardWritesMustBeWrittenAlike) {
  Json ok = Reply(Out(2e-8, 3e-8));
  for (auto& c : ok["checks"])
    c["state"] = Json::array({{{"name", "bn.running_mean"}, {"ok", true}, {"max_abs_err", 0.0}}});
  EXPECT_TRUE(JudgeChecks(ok, OneOutput(), {}).empty());

  Json skipped = ok;
  skipped["checks"][0]["state"][0] = {
      {"name", "bn.running_mean"}, {"ok", false}, {"max_abs_err", 0.03}, {"unchanged", true}};
  auto r = JudgeChecks(skipped, OneOutput(), {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("updates bn.running_mean"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("left it unchanged"), std::string::npos) << r[0];

  Json off = ok;
  off["checks"][1]["state"][0] = {{"name", "bn.running_var"}, {"ok", false}, {"max_abs_err", 0.5}};
  r = JudgeChecks(off, OneOutput(), {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("update differs (max abs error 0.5)"), std::string::npos) << r[0];

  Json unchecked = ok;
  unchecked["checks"][0]["state"][0] = {
      {"name", "bn.running_mean"}, {"ok", true}, {"unchecked", "ModelNew's state does not mirror"}};
  EXPECT_TRUE(JudgeChecks(unchecked, OneOutput(), {}).empty());
}

TEST(Verdict, MoreAccurateThanTf32ReferencePasses) {
  // A strict-fp32 kernel against a TF32 reference (reference error 3e-4):
  // the candidate is closer to the truth and must pass under calibration,
  // although it is 1e-3 away from the TF32 reference in KernelBench's eyes.
  Json out = Out(1e-7, 3e-4, /*worst_ratio=*/4.0);
  EXPECT_TRUE(JudgeChecks(Reply(out), OneOutput(), {}).empty());
  VerifyPolicy kb;
  kb.tolerance = TolerancePolicy::kKernelBench;
  EXPECT_FALSE(JudgeChecks(Reply(out), OneOutput(), kb).empty());
}

TEST(Verdict, ReducedPrecisionFailsStrictFp32) {
  // bf16-like error (3e-3) where the fp32 reference is exact to 1e-8.
  auto reasons = JudgeChecks(Reply(Out(3e-3, 1e-8)), OneOutput(), {});
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("reduced precision"), std::string::npos);
  EXPECT_NE(reasons[0].find("seed 11"), std::string::npos);
}

TEST(Verdict, StructuralFailures) {
  Json bad_shape = Out(0, 0);
  bad_shape["shape_ok"] = false;
  bad_shape["shape"] = {512};
  EXPECT_NE(JudgeChecks(Reply(bad_shape), OneOutput(), {})[0].find("shape [512]"),
            std::string::npos);

  Json unwritten = Out(0, 0);
  unwritten["poison_left"] = 7;
  unwritten["nan"] = 7;
  auto r = JudgeChecks(Reply(unwritten), OneOutput(), {});
  ASSERT_EQ(r.size(), 1u);  // the NaNs are the poison, reported once
  EXPECT_NE(r[0].find("7 element(s) the candidate never wrote"), std::string::npos);

  Json nan = Out(0, 0);
  nan["nan"] = 1;
  EXPECT_NE(JudgeChecks(Reply(nan), OneOutput(), {})[0].find("NaN"), std::string::npos);

  EXPECT_NE(JudgeChecks(Reply(Out(0, 0), true), OneOutput(), {})[0].find("modified its inputs"),
            std::string::npos);

  Json alias = Out(0, 0);
  alias["aliases_input"] = true;
  EXPECT_NE(JudgeChecks(Reply(alias), OneOutput(), {})[0].find("shares memory"), std::string::npos);

  Json two = Reply(Out(0, 0));
  two["checks"][0]["outputs"].push_back(Out(0, 0));
  EXPECT_NE(JudgeChecks(two, OneOutput(), {})[0].find("returned 2 output(s)"), std::string::npos);
  EXPECT_FALSE(JudgeChecks(Json::object(), OneOutput(), {}).empty());
}

TEST(Verdict, FallsBackToKernelBenchWithoutFloat64) {
  Json out = Out(1e-6, 0);
  out["vs_ref64"] = nullptr;
  out["ref32_vs_ref64"] = nullptr;
  EXPECT_TRUE(JudgeChecks(Reply(out), OneOutput(), {}).empty());
  out["vs_ref32"]["worst_ratio"] = 2.0;
  EXPECT_FALSE(JudgeChecks(Reply(out), OneOutput(), {}).empty());
}

TEST(Verdict, HalfPrecisionAllowance) {
  // bf16 output: rounding alone is ~4e-3 relative; the dtype floor admits it.
  auto b = OneOutput("bfloat16");
  EXPECT_TRUE(JudgeChecks(Reply(Out(4e-3, 3e-3)), b, {}).empty());
  EXPECT_DOUBLE_EQ(KernelBenchTolerance("bfloat16").atol, 1e-2);
  EXPECT_DOUBLE_EQ(KernelBenchTolerance("float32").rtol, 1e-4);
}

Json TimeReply(std::vector<double> cand, std::vector<double> host, std::vector<double> eager) {
  return Json{
      {"samples",
       {{"candidate", {{"event_ms", cand}, {"host_ms", host}}},
        {"eager", {{"event_ms", eager}, {"host_ms", eager}}}}},
      {"energy", {{"candidate", {{"mj_per_call", 1.5}, {"calls", 100}, {"window_s", 0.5}}}}}};
}

TEST(Verdict, TimingGivesMediansSpeedupAndEnergy) {
  std::vector<double> cand, host, eager;
  for (int i = 0; i < 60; ++i) {
    cand.push_back(1.0 + 0.01 * (i % 3 - 1));
    host.push_back(cand.back() + 0.02);
    eager.push_back(2.0);
  }
  Outcome o = JudgeTiming(TimeReply(cand, host, eager), OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  const auto& m = std::get<Measured>(o);
  EXPECT_DOUBLE_EQ(m.time_ms.median, 1.0);
  EXPECT_DOUBLE_EQ(*m.SpeedupVsEager(), 2.0);
  EXPECT_DOUBLE_EQ(*m.energy_mj_per_call, 1.5);
  EXPECT_TRUE(m.warnings.empty());
}

TEST(Verdict, BelowTheFloorIsImpossible) {
  auto b = OneOutput();
  b.hard_floor_ms = 1.0;
  Outcome o = JudgeTiming(TimeReply({0.5, 0.5, 0.5}, {0.52, 0.52, 0.52}, {2, 2, 2}), b, {});
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(std::get<Incorrect>(o).reasons[0].find("cannot be real"), std::string::npos);
  // Beating the reference algorithm's roofline (fewer FLOPs, folded weights)
  // is allowed: only the hard floor (inputs read, outputs written) is a limit.
  b.hard_floor_ms = 0.1;
  b.floor_ms = 5.0;
  EXPECT_TRUE(std::holds_alternative<Measured>(
      JudgeTiming(TimeReply({0.5, 0.5, 0.5}, {0.52, 0.52, 0.52}, {2, 2, 2}), b, {})));
  b.hard_floor_ms = 1.0;
  // Within the margin of the floor: accepted (a kernel at the roof is never rejected).
  EXPECT_TRUE(std::holds_alternative<Measured>(
      JudgeTiming(TimeReply({0.95, 0.95, 0.95}, {0.97, 0.97, 0.97}, {2, 2, 2}), b, {})));
}

TEST(Verdict, HostClockFarAboveEventsWarns) {
  Outcome o =
      JudgeTiming(TimeReply({0.05, 0.05, 0.05}, {2.0, 2.0, 2.0}, {1, 1, 1}), OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  ASSERT_FALSE(std::get<Measured>(o).warnings.empty());
  EXPECT_NE(std::get<Measured>(o).warnings[0].find("outside the timed stream"), std::string::npos);
}

TEST(Verdict, TamperingIsIncorrect) {
  Json r = Reply(Out(2e-8, 3e-8));
  r["tampered"] = Json::array();
  EXPECT_TRUE(JudgeChecks(r, OneOutput(), {}).empty());  // an empty list is no tampering
  r["tampered"] = {"torch.cuda.synchronize", "time.perf_counter"};
  auto reasons = JudgeChecks(r, OneOutput(), {});
  ASSERT_FALSE(reasons.empty());
  EXPECT_EQ(
      reasons[0],
      "the candidate replaced torch.cuda.synchronize, time.perf_counter; timing cannot be trusted");

  Json t = TimeReply({1, 1, 1}, {1.02, 1.02, 1.02}, {2, 2, 2});
  t["tampered"] = {"torch.cuda.Event.elapsed_time"};
  Outcome o = JudgeTiming(t, OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(std::get<Incorrect>(o).reasons[0].find("replaced torch.cuda.Event.elapsed_time"),
            std::string::npos);
}

TEST(Verdict, NonExactTensorOutputIsIncorrect) {
  Json out = Out(2e-8, 3e-8);
  out["exact_tensor"] = true;
  EXPECT_TRUE(JudgeChecks(Reply(out), OneOutput(), {}).empty());
  out["exact_tensor"] = false;
  auto reasons = JudgeChecks(Reply(out), OneOutput(), {});
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("not a plain torch.Tensor"), std::string::npos);
}

TEST(Verdict, RerunDifferenceBeyondTheAllowanceIsIncorrect) {
  Json out = Out(2e-8, 3e-8);
  out["rerun_rel_diff"] = 0.0;
  EXPECT_TRUE(JudgeChecks(Reply(out), OneOutput(), {}).empty());
  out["rerun_rel_diff"] = 1e-7;  // atomics reordering: within the allowance (64 eps)
  EXPECT_TRUE(JudgeChecks(Reply(out), OneOutput(), {}).empty());
  out["rerun_rel_diff"] = 0.3;
  auto reasons = JudgeChecks(Reply(out), OneOutput(), {});
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("changes between runs on the same inputs"), std::string::npos);
  // Under KernelBench's rule the allowance is the dtype's rtol.
  VerifyPolicy kb;
  kb.tolerance = TolerancePolicy::kKernelBench;
  out["rerun_rel_diff"] = 5e-5;
  EXPECT_TRUE(JudgeChecks(Reply(out), OneOutput(), kb).empty());
  out["rerun_rel_diff"] = 5e-3;
  EXPECT_FALSE(JudgeChecks(Reply(out), OneOutput(), kb).empty());
  // Integer outputs must repeat exactly.
  Json ints = Out(0, 0);
  ints["dtype"] = "int64";
  ints["rerun_rel_diff"] = 1e-9;
  EXPECT_FALSE(JudgeChecks(Reply(ints), OneOutput("int64"), {}).empty());
}

Json WithNull(Json reply, double null_ms, size_t n = 3) {
  reply["null_host_ms"] = std::vector<double>(n, null_ms);
  return reply;
}

TEST(Verdict, WorkOutsideTheTimedStreamIsIncorrect) {
  // Events 0.05 ms, host 2.0 ms, an empty call costs 0.03 ms on the host:
  // 1.92 ms of the call ran where the events did not see it.
  Outcome o = JudgeTiming(WithNull(TimeReply({0.05, 0.05, 0.05}, {2.0, 2.0, 2.0}, {1, 1, 1}), 0.03),
                          OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(
      std::get<Incorrect>(o).reasons[0].find("1.92 ms of the call ran outside the timed stream"),
      std::string::npos);
  // Events below the hard floor (the kernel ran on a non-blocking stream):
  // the specific reason wins over "cannot be real".
  auto b = OneOutput();
  b.hard_floor_ms = 1.0;
  o = JudgeTiming(WithNull(TimeReply({0.05, 0.05, 0.05}, {2.0, 2.0, 2.0}, {1, 1, 1}), 0.03), b, {});
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(std::get<Incorrect>(o).reasons[0].find("outside the timed stream"), std::string::npos);
}

TEST(Verdict, HostOverheadExplainedByTheNullCallIsFine) {
  // Host 1.05 = events 1.0 + the null call's 0.05: nothing hidden.
  Outcome o = JudgeTiming(WithNull(TimeReply({1, 1, 1}, {1.05, 1.05, 1.05}, {2, 2, 2}), 0.05),
                          OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  EXPECT_DOUBLE_EQ(std::get<Measured>(o).time_ms.median, 1.0);
  EXPECT_TRUE(std::get<Measured>(o).warnings.empty());
  // A small excess (within max(10%, 20 us)) is tolerated: the events still
  // rank, and past half the tolerance the record carries a warning.
  o = JudgeTiming(WithNull(TimeReply({1, 1, 1}, {1.13, 1.13, 1.13}, {2, 2, 2}), 0.05), OneOutput(),
                  {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  EXPECT_DOUBLE_EQ(std::get<Measured>(o).time_ms.median, 1.0);
  ASSERT_EQ(std::get<Measured>(o).warnings.size(), 1u);
  EXPECT_NE(std::get<Measured>(o).warnings[0].find("beyond the CUDA events"), std::string::npos);
  // Short kernels: the 20 us absolute slack applies (10% of 0.01 ms is 1 us).
  o = JudgeTiming(WithNull(TimeReply({0.01, 0.01, 0.01}, {0.055, 0.055, 0.055}, {2, 2, 2}), 0.03),
                  OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  o = JudgeTiming(WithNull(TimeReply({0.01, 0.01, 0.01}, {0.075, 0.075, 0.075}, {2, 2, 2}), 0.03),
                  OneOutput(), {});
  EXPECT_TRUE(std::holds_alternative<Incorrect>(o));
}

TEST(Verdict, TheReferencesOwnHostExcessIsTheBaseline) {
  // Events 0.25 ms, host 0.34, empty call 0.06: 0.03 ms beyond the events,
  // past the 0.025 tolerated. When the reference, timed in the same loop,
  // shows the same excess, the host was slow, not the candidate.
  auto reply = [](double eager_excess) {
    Json r = WithNull(TimeReply({0.25, 0.25, 0.25}, {0.34, 0.34, 0.34}, {0.3, 0.3, 0.3}), 0.06);
    r["samples"]["eager"]["host_ms"] = std::vector<double>(3, 0.3 + 0.06 + eager_excess);
    return r;
  };
  EXPECT_TRUE(std::holds_alternative<Incorrect>(JudgeTiming(reply(0.0), OneOutput(), {})));
  Outcome o = JudgeTiming(reply(0.027), OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o)) << OutcomeLine(o);
  EXPECT_TRUE(std::get<Measured>(o).warnings.empty());
  // The baseline is capped at the tolerance: a reference with a large host
  // excess cannot hide a candidate's work on another stream.
  Json hidden = reply(5.0);
  hidden["samples"]["candidate"]["host_ms"] = std::vector<double>(3, 0.42);
  o = JudgeTiming(hidden, OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(std::get<Incorrect>(o).reasons[0].find("less the 0.025 ms the eager reference shows"),
            std::string::npos)
      << std::get<Incorrect>(o).reasons[0];
}

TEST(Verdict, TimedCallAuditMustBeCorrect) {
  Json t = TimeReply({1, 1, 1}, {1.02, 1.02, 1.02}, {2, 2, 2});
  t["timing_audit"] = {{"seed", 1000}, {"input_set", 0}, {"outputs", {Out(2e-8, 3e-8)}}};
  EXPECT_TRUE(std::holds_alternative<Measured>(JudgeTiming(t, OneOutput(), {})));
  t["timing_audit"]["outputs"][0] = Out(2e-2, 3e-8);  // a stale, replayed result
  Outcome o = JudgeTiming(t, OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(std::get<Incorrect>(o).reasons[0].find("in the timed calls"), std::string::npos);
  t["timing_audit"] = nullptr;  // not measured
  EXPECT_TRUE(std::holds_alternative<Measured>(JudgeTiming(t, OneOutput(), {})));
}

TEST(Verdict, MissingIntegrityFieldsMeanNotMeasured) {
  // Replies recorded before these fields existed: no tampering, no rerun, no
  // null call: judged as before (the host gap is a warning, not a failure).
  EXPECT_TRUE(JudgeChecks(Reply(Out(2e-8, 3e-8)), OneOutput(), {}).empty());
  Outcome o =
      JudgeTiming(TimeReply({0.05, 0.05, 0.05}, {2.0, 2.0, 2.0}, {1, 1, 1}), OneOutput(), {});
  EXPECT_TRUE(std::holds_alternative<Measured>(o));
  // A cpu worker (host clock only) with a null call: judged by the host clock.
  Json cpu{
      {"samples", {{"candidate", {{"event_ms", Json::array()}, {"host_ms", {1.0, 1.0, 1.0}}}}}},
      {"null_host_ms", {0.001, 0.001, 0.001}}};
  o = JudgeTiming(cpu, OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  EXPECT_DOUBLE_EQ(std::get<Measured>(o).time_ms.median, 1.0);
}

// --- the contract ---------------------------------------------------------

TEST(VerdictContract, Tf32ContractWidensByTheEmulatedReferencesError) {
  // TF32-like error (3e-4) on a matmul whose fp32 reference is exact to 4e-7;
  // a reference with TF32-rounded operands is off by 2.9e-4.
  Json out = Out(3e-4, 4e-7);
  out["reflowp_vs_ref64"] = Json{{"rel_l2", 2.9e-4}, {"max_abs", 2e-3}};
  auto strict = JudgeChecks(Reply(out), OneOutput(), {});
  ASSERT_EQ(strict.size(), 1u);
  EXPECT_NE(strict[0].find("the contract is strict fp32"), std::string::npos) << strict[0];
  Contract tf32;
  tf32.precision = Precision::kTf32;
  EXPECT_TRUE(JudgeChecks(Reply(out), OneOutput(), {}, tf32).empty());
  // bf16-like error is still too much for a tf32 contract.
  Json bf16 = Out(3e-3, 4e-7);
  bf16["reflowp_vs_ref64"] = Json{{"rel_l2", 2.9e-4}, {"max_abs", 2e-3}};
  auto r = JudgeChecks(Reply(bf16), OneOutput(), {}, tf32);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("as a tf32 reference"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("lower precision than the contract allows"), std::string::npos) << r[0];
  // Without the emulated figure (an older worker) nothing widens.
  EXPECT_FALSE(JudgeChecks(Reply(Out(3e-4, 4e-7)), OneOutput(), {}, tf32).empty());
}

TEST(VerdictContract, TorchOpsAreJudgedOnlyWhereTheContractForbidsThem) {
  Json reply = Reply(Out(2e-8, 3e-8));
  reply["torch_ops"] = Json{
      {"candidate",
       {{"aten::relu", 2}, {"aten::empty_like", 2}, {"aten::sigmoid", 4}, {"my_ext::relu", 2}}},
      {"reference", {{"aten::relu", 1}}},
      {"candidate_forwards", 2}};
  EXPECT_TRUE(JudgeChecks(reply, OneOutput(), {}).empty());  // the default contract allows them
  Contract forbid;
  forbid.torch_ops = false;
  auto r = JudgeChecks(reply, OneOutput(), {}, forbid);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("the contract forbids torch operators"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("aten::relu (1 call(s) per forward), which the reference itself uses"),
            std::string::npos)
      << r[0];
  EXPECT_NE(r[0].find("aten::sigmoid (2 call(s) per forward)"), std::string::npos) << r[0];
  EXPECT_EQ(r[0].find("empty_like"), std::string::npos) << r[0];
  EXPECT_EQ(r[0].find("my_ext"), std::string::npos)
      << r[0];  // the candidate's own registered kernel
  Json glue = Reply(Out(2e-8, 3e-8));
  glue["torch_ops"] =
      Json{{"candidate", {{"aten::empty_like", 3}, {"aten::view", 3}, {"aten::copy_", 3}}},
           {"reference", {{"aten::relu", 1}}}};
  EXPECT_TRUE(JudgeChecks(glue, OneOutput(), {}, forbid).empty());
}

TEST(VerdictContract, SecondShapeFailureSaysSo) {
  Json reply = Reply(Out(2e-8, 3e-8));
  Json unwritten = Out(2e-8, 3e-8);
  unwritten["poison_left"] = 16384;
  unwritten["nan"] = 16384;
  reply["checks"].push_back(Json{{"seed", 11},
                                 {"order", "candidate_first"},
                                 {"inputs_mutated", false},
                                 {"second_shape", {{"batch_size", 8193}}},
                                 {"outputs", {unwritten}}});
  auto r = JudgeChecks(reply, OneOutput(), {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(
      r[0].find(
          "on the contract's second shape (batch_size=8193): the output has 16384 element(s) the "
          "candidate never wrote"),
      std::string::npos)
      << r[0];
  EXPECT_NE(r[0].find("likely hard-codes the shape"), std::string::npos) << r[0];

  // A wrong shape names the second shape's reference shape, not the bundle's.
  Json wrong = Out(0, 0);
  wrong["shape_ok"] = false;
  wrong["shape"] = {8, 33};
  wrong["ref_shape"] = {17, 33};
  Json r2 = Reply(Out(2e-8, 3e-8));
  r2["checks"].push_back(Json{{"seed", 11},
                              {"order", "candidate_first"},
                              {"second_shape", {{"batch_size", 17}}},
                              {"outputs", {wrong}}});
  auto reasons = JudgeChecks(r2, OneOutput(), {});
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("has shape [8, 33] but the reference has [17, 33]"), std::string::npos)
      << reasons[0];
}

// --- trust under search pressure -------------------------------------------

namespace trust {

Json Fp(double sum, double abs_sum, double sq_sum, std::vector<double> samples = {1.0, -2.0, 0.5}) {
  return Json{{"shape", {1024}},    {"dtype", "float32"}, {"numel", 1024},
              {"nan", 0},           {"inf", 0},           {"sum", sum},
              {"abs_sum", abs_sum}, {"sq_sum", sq_sum},   {"samples", samples}};
}

Json Check(int seed, const std::string& dist, const Json& out, const Json& ref_fp) {
  return Json{{"seed", seed},         {"order", "candidate_first"},
              {"distribution", dist}, {"inputs_mutated", false},
              {"outputs", {out}},     {"input_fp", {Fp(3, 500, 400)}},
              {"ref_fp", {ref_fp}},   {"ref64_fp", {ref_fp}}};
}

CleanFacts Clean(const Json& ref_fp, double ref_rel = 3e-8) {
  CleanFacts c;
  c.reference = ParseReferenceReply(
      Json{{"checks",
            {{{"seed", 11},
              {"distribution", "task"},
              {"input_fp", {Fp(3, 500, 400)}},
              {"ref_fp", {ref_fp}},
              {"ref64_fp", {ref_fp}},
              {"ref_error", {{{"rel_l2", ref_rel}, {"max_abs", 3 * ref_rel}}}}},
             {{"seed", 11},
              {"distribution", "signed"},
              {"input_fp", {Fp(3, 500, 400)}},
              {"ref_fp", {ref_fp}},
              {"ref64_fp", {ref_fp}},
              {"ref_error", {{{"rel_l2", ref_rel}, {"max_abs", 3 * ref_rel}}}}}}}});
  return c;
}

}  // namespace trust

TEST(VerdictTrust, FingerprintsCompareWithinTheTolerance) {
  using trust::Fp;
  EXPECT_EQ(FingerprintDifference(Fp(3, 500, 400), Fp(3, 500, 400), 0), "");
  EXPECT_EQ(FingerprintDifference(Fp(3, 500, 400), Fp(3 + 1e-4, 500, 400), 1e-6),
            "");  // 1e-4 <= 1e-6 * 500
  EXPECT_NE(FingerprintDifference(Fp(3, 500, 400), Fp(4, 500, 400), 1e-6).find("sum"),
            std::string::npos);
  EXPECT_NE(FingerprintDifference(Fp(3, 500, 400, {1, 2, 3}), Fp(3, 500, 400, {1, 2, 4}), 1e-6)
                .find("sampled"),
            std::string::npos);
  Json other = Fp(3, 500, 400);
  other["shape"] = {512, 2};
  EXPECT_NE(FingerprintDifference(Fp(3, 500, 400), other, 1).find("shape"), std::string::npos);
  other = Fp(3, 500, 400);
  other["nan"] = 1;
  EXPECT_NE(FingerprintDifference(Fp(3, 500, 400), other, 1).find("NaN"), std::string::npos);
}

TEST(VerdictTrust, AReferenceChangedInTheCandidatesProcessIsIncorrect) {
  Json same = trust::Fp(3, 500, 400);
  Json reply{{"checks", {trust::Check(11, "task", Out(2e-8, 3e-8), same)}}};
  CleanFacts clean = trust::Clean(same);
  EXPECT_TRUE(JudgeChecks(reply, OneOutput(), {}, {}, &clean).empty());
  // The candidate made the reference return zeros, and returns zeros itself:
  // in its own process the outputs agree (Out's error is tiny).
  Json zeros = trust::Fp(0, 0, 0, {0, 0, 0});
  Json cheat{{"checks", {trust::Check(11, "task", Out(0, 0), zeros)}}};
  auto reasons = JudgeChecks(cheat, OneOutput(), {}, {}, &clean);
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("differs from a clean process's (seed 11"), std::string::npos)
      << reasons[0];
  // Without clean facts (recorded replies, or no clean worker) it is not judged.
  EXPECT_TRUE(JudgeChecks(cheat, OneOutput(), {}).empty());
}

TEST(VerdictTrust, TheCleanProcessesReferenceErrorSetsTheAllowance) {
  // The candidate's process claims its reference is off by 1e-3 (it made it
  // worse), which would admit a 3e-3 error; the clean process says 3e-8.
  Json same = trust::Fp(3, 500, 400);
  Json reply{{"checks", {trust::Check(11, "task", Out(3e-3, 1e-3), same)}}};
  EXPECT_TRUE(JudgeChecks(reply, OneOutput(), {}).empty());
  CleanFacts clean = trust::Clean(same, 3e-8);
  EXPECT_FALSE(JudgeChecks(reply, OneOutput(), {}, {}, &clean).empty());
}

TEST(VerdictTrust, RightOnlyOnTheTasksDistributionSaysSo) {
  Json same = trust::Fp(3, 500, 400);
  Json reply{{"checks",
              {trust::Check(11, "task", Out(2e-8, 3e-8), same),
               trust::Check(11, "signed", Out(0.7, 3e-8), same)}}};
  CleanFacts clean = trust::Clean(same);
  auto reasons = JudgeChecks(reply, OneOutput(), {}, {}, &clean);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("on signed inputs:"), std::string::npos) << reasons[0];
  EXPECT_NE(reasons[0].find("right only on get_inputs()'s distribution"), std::string::npos)
      << reasons[0];
}

TEST(VerdictTrust, AWrongTimedCallIsIncorrectAndABaselinesIsAWarning) {
  Json t = TimeReply({1, 1, 1}, {1.02, 1.02, 1.02}, {2, 2, 2});
  Json good{
      {"call", 7}, {"input_set", 0}, {"inputs_mutated", false}, {"outputs", {Out(2e-8, 3e-8)}}};
  Json bad{{"call", 9}, {"input_set", 1}, {"inputs_mutated", false}, {"outputs", {Out(0.9, 3e-8)}}};
  t["timed_checks"] = {{"p", 0.05},
                       {"suspicious", nullptr},
                       {"contenders",
                        {{"candidate", {{"calls", 40}, {"checks", {good}}}},
                         {"eager", {{"calls", 40}, {"checks", {good}}}}}}};
  Outcome o = JudgeTiming(t, OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  EXPECT_NE(std::get<Measured>(o).notes.at(0).find("1 of its 40 timed calls"), std::string::npos);
  t["timed_checks"]["contenders"]["candidate"]["checks"].push_back(bad);
  o = JudgeTiming(t, OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(std::get<Incorrect>(o).reasons[0].find(
                "timed call 9 of 40, one of 2 chosen at random after they ran"),
            std::string::npos)
      << std::get<Incorrect>(o).reasons[0];
  Json mutated = good;
  mutated["inputs_mutated"] = true;
  t["timed_checks"]["contenders"]["candidate"]["checks"] = {mutated};
  o = JudgeTiming(t, OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(std::get<Incorrect>(o).reasons[0].find("modified its inputs"), std::string::npos);
  t["timed_checks"]["contenders"]["candidate"]["checks"] = {good};
  t["timed_checks"]["contenders"]["eager"]["checks"] = {bad};
  o = JudgeTiming(t, OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  EXPECT_NE(std::get<Measured>(o).warnings.at(0).find("the eager baseline was wrong"),
            std::string::npos);
}

TEST(VerdictTrust, ASuspiciousTimeIsCheckedMoreAndSaysSo) {
  Json t = TimeReply({1, 1, 1}, {1.02, 1.02, 1.02}, {2, 2, 2});
  t["timed_checks"] = {
      {"p", 0.05},
      {"suspicious",
       {{"median_ms", 1.0}, {"floor_ms", 5.0}, {"fraction", 0.5}, {"after_calls", 5}, {"p", 0.25}}},
      {"contenders", {{"candidate", {{"calls", 40}, {"checks", Json::array()}}}}}};
  Outcome o = JudgeTiming(t, OneOutput(), {});
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  EXPECT_NE(std::get<Measured>(o).notes.back().find("below 50% of the reference algorithm's floor"),
            std::string::npos);
}

TEST(VerdictTrust, ABaselineSlowedBesideTheCandidateIsIncorrect) {
  Json t = TimeReply({1, 1, 1}, {1.02, 1.02, 1.02}, {2, 2, 2});
  CleanFacts clean;
  clean.eager_ms = Summarize({1.9, 1.9, 1.9});
  Outcome o = JudgeTiming(t, OneOutput(), {}, {}, &clean);
  ASSERT_TRUE(std::holds_alternative<Measured>(o));
  // Speed-ups rest on the faster eager median: the clean process's here.
  EXPECT_DOUBLE_EQ(*std::get<Measured>(o).SpeedupVsEager(), 1.9);
  clean.eager_ms = Summarize({1.2, 1.2, 1.2});
  o = JudgeTiming(t, OneOutput(), {}, {}, &clean);
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(std::get<Incorrect>(o).reasons[0].find("1.67x slower beside the candidate"),
            std::string::npos)
      << std::get<Incorrect>(o).reasons[0];
  // Tiny calls jitter: a large ratio on a tiny absolute gap is not a verdict.
  Json tiny = TimeReply({0.001, 0.001, 0.001}, {0.002, 0.002, 0.002}, {0.004, 0.004, 0.004});
  clean.eager_ms = Summarize({0.002, 0.002, 0.002});
  TaskBundle small = OneOutput();
  small.hard_floor_ms = 0;
  Outcome ok = JudgeTiming(tiny, small, {}, {}, &clean);
  EXPECT_TRUE(std::holds_alternative<Measured>(ok)) << OutcomeLine(ok);
  // A launch-bound ~10 us reference read 4x apart between two processes (as
  // on the H100 in session 16) is noise, not a slowed reference ...
  Json launch = TimeReply({0.01, 0.01, 0.01}, {0.012, 0.012, 0.012}, {0.06, 0.06, 0.06});
  clean.eager_ms = Summarize({0.015, 0.015, 0.015});
  ok = JudgeTiming(launch, small, {}, {}, &clean);
  EXPECT_TRUE(std::holds_alternative<Measured>(ok)) << OutcomeLine(ok);
  EXPECT_DOUBLE_EQ(*std::get<Measured>(ok).EagerMs(), 0.015);
  // ... while a sleep of a few milliseconds in the reference is caught.
  Json slept = TimeReply({0.01, 0.01, 0.01}, {0.012, 0.012, 0.012}, {3.0, 3.0, 3.0});
  EXPECT_TRUE(std::holds_alternative<Incorrect>(JudgeTiming(slept, small, {}, {}, &clean)));
}

TEST(VerdictTrust, OnTheHostClockABusyMachineIsNotASlowedReference) {
  // A CPU worker on a loaded two-core machine: most eager calls beside the
  // candidate read 4x the clean median (the CI failure of session 20), the
  // fastest does not. Not a verdict ...
  auto host_reply = [](std::vector<double> eager) {
    return Json{{"samples",
                 {{"candidate", {{"event_ms", Json::array()}, {"host_ms", {0.2, 0.2, 0.2, 0.2}}}},
                  {"eager", {{"event_ms", Json::array()}, {"host_ms", eager}}}}}};
  };
  CleanFacts clean;
  clean.host_clock = true;
  clean.eager_ms = Summarize({0.25, 0.25, 0.26, 0.25});
  TaskBundle b = OneOutput();
  b.hard_floor_ms = 0;
  Outcome ok = JudgeTiming(host_reply({1.0, 1.05, 0.27, 1.1}), b, {}, {}, &clean);
  EXPECT_TRUE(std::holds_alternative<Measured>(ok)) << OutcomeLine(ok);
  // ... while a busy wait of 2 ms in the reference slows every call.
  Outcome bad = JudgeTiming(host_reply({2.3, 2.25, 2.4, 2.26}), b, {}, {}, &clean);
  ASSERT_TRUE(std::holds_alternative<Incorrect>(bad)) << OutcomeLine(bad);
  EXPECT_NE(std::get<Incorrect>(bad).reasons[0].find("fastest call 2.25 ms"), std::string::npos)
      << std::get<Incorrect>(bad).reasons[0];
}

TEST(VerdictTrust, TheReferenceProbeAfterTimingMustMatchTheCleanProcess) {
  Json same = trust::Fp(3, 500, 400);
  CleanFacts clean = trust::Clean(same);
  Json t = TimeReply({1, 1, 1}, {1.02, 1.02, 1.02}, {2, 2, 2});
  t["ref_probe"] = {{"seed", 11}, {"input_fp", {trust::Fp(3, 500, 400)}}, {"ref_fp", {same}}};
  EXPECT_TRUE(std::holds_alternative<Measured>(JudgeTiming(t, OneOutput(), {}, {}, &clean)));
  t["ref_probe"]["ref_fp"] = {trust::Fp(0, 0, 0, {0, 0, 0})};
  Outcome o = JudgeTiming(t, OneOutput(), {}, {}, &clean);
  ASSERT_TRUE(std::holds_alternative<Incorrect>(o));
  EXPECT_NE(std::get<Incorrect>(o).reasons[0].find("after its timed calls"), std::string::npos);
}

}  // namespace
}  // namespace kopt
