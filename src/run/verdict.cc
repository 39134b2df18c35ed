#include "run/verdict.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "core/stats.h"

namespace kopt {
namespace {

std::vector<double> Doubles(const Json& j) {
  std::vector<double> v;
  if (j.is_array())
    for (const auto& x : j)
      if (x.is_number()) v.push_back(x.get<double>());
  return v;
}

std::string Shape(const Json& j) {
  std::string s = "[";
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) s += (i ? ", " : "") + j[i].dump();
  return s + "]";
}

double Num(const Json& j, const char* key) { return NumberOr(j, key, 0); }

// "seed 11, signed inputs" / "seed 11": where a check ran.
std::string CheckPlace(const Json& check) {
  std::string dist = check.value("distribution", "task");
  std::string s = fmt::format("seed {}", check.value("seed", -1));
  if (dist != "task") s += ", " + dist + " inputs";
  return s;
}

// The clean process's check matching `check` (same seed, distribution and
// shape), or null.
const Json* CleanCheck(const Json& check, const CleanFacts* clean) {
  if (!clean || !clean->reference.is_object()) return nullptr;
  auto it = clean->reference.find("checks");  // a reference into the facts, never a copy
  if (it == clean->reference.end() || !it->is_array()) return nullptr;
  const Json& list = *it;
  bool shape = check.contains("second_shape") && check["second_shape"].is_object();
  for (const auto& c : list) {
    if (c.value("seed", -1) != check.value("seed", -2)) continue;
    if (c.value("distribution", "task") != check.value("distribution", "task")) continue;
    if ((c.contains("second_shape") && c["second_shape"].is_object()) != shape) continue;
    return &c;
  }
  return nullptr;
}

// Compares one list of fingerprints with the clean process's; "" or why.
std::string ListDifference(const Json& mine, const Json& clean, const std::function<double(size_t)>& tol,
                           const char* what) {
  if (!clean.is_array()) return "";
  if (!mine.is_array()) return fmt::format("no fingerprints of the {}", what);
  if (mine.size() != clean.size())
    return fmt::format("{} {} here, {} in the clean process", mine.size(), what, clean.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    std::string d = FingerprintDifference(mine[i], clean[i], tol(i));
    if (!d.empty()) return fmt::format("{} {}: {}", what, i, d);
  }
  return "";
}

// Judges one output of one seed; appends reasons.
void JudgeOutput(size_t index, const Json& out, const TaskBundle& bundle, const VerifyPolicy& policy,
                 const Contract& contract, std::vector<std::string>* reasons) {
  std::string name = bundle.outputs.size() > 1 ? fmt::format("output {}", index) : "the output";
  if (out.contains("exact_tensor") && out["exact_tensor"].is_boolean() && !out["exact_tensor"].get<bool>())
    reasons->push_back(fmt::format(
        "{} is not a plain torch.Tensor (a subclass or a deferred object): its values could be computed after the "
        "timer stopped, or differ from what it reports",
        name));
  if (!out.value("shape_ok", false)) {
    std::string expect = out.contains("ref_shape") && out["ref_shape"].is_array() ? Shape(out["ref_shape"])
                         : index < bundle.outputs.size()                          ? Shape(Json(bundle.outputs[index].shape))
                                                                                  : "?";
    reasons->push_back(fmt::format("{} has shape {} but the reference has {}", name,
                                   Shape(out.value("shape", Json::array())), expect));
    return;
  }
  if (!out.value("dtype_ok", false)) {
    reasons->push_back(fmt::format("{} has dtype {} but the reference has {}", name, out.value("dtype", "?"),
                                   index < bundle.outputs.size() ? bundle.outputs[index].dtype : "?"));
    return;
  }
  if (out.value("aliases_input", false))
    reasons->push_back(fmt::format("{} shares memory with an input or parameter", name));
  long poison = out.value("poison_left", 0L);
  if (poison > 0)
    reasons->push_back(fmt::format("{} has {} element(s) the candidate never wrote", name, poison));
  long nan = out.value("nan", 0L), inf = out.value("inf", 0L);
  if (nan > 0 || inf > 0) {
    if (poison == 0)
      reasons->push_back(fmt::format("{} contains {} NaN and {} Inf value(s)", name, nan, inf));
    return;
  }

  std::string dtype = index < bundle.outputs.size() ? bundle.outputs[index].dtype : "float32";
  const Json& vs32 = out.contains("vs_ref32") ? out["vs_ref32"] : Json();
  const Json& vs64 = out.contains("vs_ref64") ? out["vs_ref64"] : Json();
  Json ref = out.contains("ref32_vs_ref64") ? out["ref32_vs_ref64"] : Json();
  // A contract allowing TF32 or bf16 matrix operands: the reference's own
  // error is the larger of the fp32 reference's and that of the reference
  // with its matrix operands rounded to that precision (the worker's
  // `reflowp_vs_ref64`): the allowance a TF32 (bf16) reference would get.
  std::string lowp_note;
  if (contract.precision != Precision::kStrict && ref.is_object() && out.contains("reflowp_vs_ref64") &&
      out["reflowp_vs_ref64"].is_object()) {
    const Json& lp = out["reflowp_vs_ref64"];
    for (const char* k : {"rel_l2", "max_abs"}) ref[k] = std::max(NumberOr(ref, k), NumberOr(lp, k));
    lowp_note = fmt::format(" (as a {} reference; the contract allows it)", PrecisionName(contract.precision));
  }

  // Determinism: the same inputs run twice (the worker scribbles over freed
  // memory in between) must agree within the accuracy allowance; atomics'
  // reordering stays far below it, an uninitialised read or a race does not.
  if (out.contains("rerun_rel_diff") && out["rerun_rel_diff"].is_number()) {
    double allowed = KernelBenchTolerance(dtype).rtol;
    if (policy.tolerance == TolerancePolicy::kCalibrated && !ref.is_null())
      allowed = std::max(policy.reference_error_multiple * NumberOr(ref, "rel_l2"),
                         policy.dtype_eps_multiple * DtypeEpsilon(dtype));
    double diff = out["rerun_rel_diff"].get<double>();
    if (diff > allowed)
      reasons->push_back(fmt::format(
          "the candidate's output changes between runs on the same inputs: it reads memory nothing wrote, or "
          "races ({} differs by {:.3g} relative L2 between two runs; allowed {:.3g})",
          name, diff, allowed));
  }

  if (policy.tolerance == TolerancePolicy::kKernelBench || vs64.is_null() || ref.is_null()) {
    double worst = NumberOr(vs32, "worst_ratio", 1e300);
    if (worst > 1.0) {
      Tolerance tol = KernelBenchTolerance(dtype);
      reasons->push_back(fmt::format(
          "{} differs from the fp32 reference beyond atol={:g}, rtol={:g} (worst element at {:.3g}x the "
          "tolerance, max abs error {:.3g})",
          name, tol.atol, tol.rtol, worst, NumberOr(vs32, "max_abs")));
    }
    return;
  }

  double eps = DtypeEpsilon(dtype);
  double scale = std::max(NumberOr(out, "ref_max_abs"), 1e-30);
  double allowed_rel = std::max(policy.reference_error_multiple * NumberOr(ref, "rel_l2"), policy.dtype_eps_multiple * eps);
  double allowed_abs =
      std::max(policy.reference_error_multiple * NumberOr(ref, "max_abs"), policy.dtype_eps_multiple * eps * scale);
  double rel = NumberOr(vs64, "rel_l2", 1e300), abs_err = NumberOr(vs64, "max_abs", 1e300);
  if (rel > allowed_rel) {
    reasons->push_back(fmt::format(
        "{} is off by {:.3g} (relative L2) against the float64 truth; allowed {:.3g}, the reference itself "
        "is off by {:.3g}{}{}",
        name, rel, allowed_rel, NumberOr(ref, "rel_l2"), lowp_note,
        rel >= 3e-2 ? ""
        : contract.precision == Precision::kStrict
            ? " (looks like reduced precision or a different algorithm; the contract is strict fp32)"
            : " (looks like lower precision than the contract allows, or a different algorithm)"));
  } else if (abs_err > allowed_abs) {
    reasons->push_back(fmt::format(
        "{} has an element off by {:.3g} against the float64 truth; allowed {:.3g} (the reference's "
        "worst is {:.3g}{})",
        name, abs_err, allowed_abs, NumberOr(ref, "max_abs"), lowp_note));
  }
}

}  // namespace

Json ToJson(const CleanFacts& c) {
  Json j{{"reference", c.reference}, {"host_clock", c.host_clock}};
  if (c.eager_ms) j["eager_ms"] = ToJson(*c.eager_ms);
  if (c.compile_ms) j["compile_ms"] = ToJson(*c.compile_ms);
  return j;
}

CleanFacts CleanFactsFromJson(const Json& j) {
  CleanFacts c;
  if (!j.is_object()) return c;
  c.reference = j.value("reference", Json());
  c.host_clock = j.value("host_clock", false);
  if (j.contains("eager_ms") && j["eager_ms"].is_object()) c.eager_ms = SampleSummaryFromJson(j["eager_ms"]);
  if (j.contains("compile_ms") && j["compile_ms"].is_object()) c.compile_ms = SampleSummaryFromJson(j["compile_ms"]);
  return c;
}

std::string FingerprintDifference(const Json& a, const Json& b, double rel_tol) {
  if (!a.is_object() || !b.is_object()) return "missing";
  if (a.value("type", "") != b.value("type", "")) return "different types";
  if (a.contains("type")) return "";  // not a tensor on either side
  if (a.value("shape", Json::array()) != b.value("shape", Json::array()))
    return fmt::format("shape {} vs {}", Shape(a.value("shape", Json::array())), Shape(b.value("shape", Json::array())));
  if (a.value("dtype", "") != b.value("dtype", ""))
    return fmt::format("dtype {} vs {}", a.value("dtype", ""), b.value("dtype", ""));
  if (Num(a, "nan") != Num(b, "nan") || Num(a, "inf") != Num(b, "inf"))
    return fmt::format("{:g} NaN and {:g} Inf vs {:g} and {:g}", Num(a, "nan"), Num(a, "inf"), Num(b, "nan"),
                       Num(b, "inf"));
  double abs_sum = std::max(Num(a, "abs_sum"), Num(b, "abs_sum"));
  double sq_sum = std::max(Num(a, "sq_sum"), Num(b, "sq_sum"));
  double tiny = 1e-300;
  if (std::fabs(Num(a, "sum") - Num(b, "sum")) > rel_tol * abs_sum + tiny)
    return fmt::format("sum {:.10g} vs {:.10g}", Num(a, "sum"), Num(b, "sum"));
  if (std::fabs(Num(a, "abs_sum") - Num(b, "abs_sum")) > rel_tol * abs_sum + tiny)
    return fmt::format("sum of |x| {:.10g} vs {:.10g}", Num(a, "abs_sum"), Num(b, "abs_sum"));
  if (std::fabs(Num(a, "sq_sum") - Num(b, "sq_sum")) > 2 * rel_tol * sq_sum + tiny)
    return fmt::format("sum of squares {:.10g} vs {:.10g}", Num(a, "sq_sum"), Num(b, "sq_sum"));
  const Json sa = a.value("samples", Json::array()), sb = b.value("samples", Json::array());
  if (sa.size() != sb.size()) return "different samples";
  double numel = std::max(1.0, Num(a, "numel"));
  double rms = std::sqrt(sq_sum / numel);
  for (size_t i = 0; i < sa.size(); ++i) {
    double x = sa[i].is_number() ? sa[i].get<double>() : 0, y = sb[i].is_number() ? sb[i].get<double>() : 0;
    if (std::fabs(x - y) > rel_tol * (std::fabs(y) + rms) * 4 + tiny)
      return fmt::format("sampled element {:.10g} vs {:.10g}", x, y);
  }
  return "";
}

Tolerance KernelBenchTolerance(const std::string& dtype) {
  if (dtype == "float16" || dtype == "bfloat16") return {1e-2, 1e-2};
  return {1e-4, 1e-4};
}

double DtypeEpsilon(const std::string& dtype) {
  if (dtype == "float64") return 2.220446049250313e-16;
  if (dtype == "bfloat16") return 7.8125e-3;
  if (dtype == "float16") return 9.765625e-4;
  if (dtype == "float32") return 1.1920928955078125e-7;
  return 0;  // integer and bool outputs must match exactly
}

std::string TamperReason(const Json& reply) {
  if (!reply.is_object() || !reply.contains("tampered") || !reply["tampered"].is_array() ||
      reply["tampered"].empty())
    return "";
  std::string names;
  for (size_t i = 0; i < reply["tampered"].size(); ++i) {
    const Json& n = reply["tampered"][i];
    names += (i ? ", " : "") + (n.is_string() ? n.get<std::string>() : n.dump());
  }
  return fmt::format("the candidate replaced {}; timing cannot be trusted", names);
}

std::string TorchOpsReason(const Json& reply, const Contract& contract) {
  if (contract.torch_ops || !reply.is_object() || !reply.contains("torch_ops") || !reply["torch_ops"].is_object())
    return "";
  const Json& ops = reply["torch_ops"];
  const Json cand = ops.value("candidate", Json::object());
  const Json ref = ops.value("reference", Json::object());
  double forwards = std::max(1.0, NumberOr(ops, "candidate_forwards", 1));
  std::vector<std::string> shared, other;
  for (const auto& [name, count] : cand.items()) {
    if (!IsTorchOp(name) || IsStructuralTorchOp(name)) continue;
    std::string item = fmt::format("{} ({:.3g} call(s) per forward)", name, NumberOr(cand, name.c_str()) / forwards);
    (ref.contains(name) ? shared : other).push_back(item);
  }
  if (shared.empty() && other.empty()) return "";
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < 6; ++i) s += (i ? ", " : "") + v[i];
    if (v.size() > 6) s += fmt::format(" and {} more", v.size() - 6);
    return s;
  };
  std::string s = "the contract forbids torch operators (allocation, views and copies only), but the candidate called ";
  if (!shared.empty()) s += join(shared) + ", which the reference itself uses: it calls the reference's operator (or Model) instead of implementing it";
  if (!shared.empty() && !other.empty()) s += "; and ";
  if (!other.empty()) s += join(other);
  return s;
}

std::vector<std::string> JudgeChecks(const Json& reply, const TaskBundle& bundle, const VerifyPolicy& policy,
                                     const Contract& contract, const CleanFacts* clean) {
  std::vector<std::string> reasons;
  if (std::string t = TamperReason(reply); !t.empty()) reasons.push_back(t);
  if (std::string t = TorchOpsReason(reply, contract); !t.empty()) reasons.push_back(t);
  const Json checks = reply.value("checks", Json::array());
  if (checks.empty()) return {"the worker returned no checks"};
  // The reference the candidate's process computed must be the clean
  // process's: same inputs, same outputs within the reference's own error.
  for (const auto& check : checks) {
    const Json* cc = CleanCheck(check, clean);
    if (!cc) continue;
    const Json ref_error = cc->value("ref_error", Json());
    auto out_tol = [&](size_t i) {
      std::string dtype = i < bundle.outputs.size() ? bundle.outputs[i].dtype : "float32";
      double err = ref_error.is_array() && i < ref_error.size() ? NumberOr(ref_error[i], "rel_l2") : 0;
      return std::max(policy.reference_error_multiple * err, policy.dtype_eps_multiple * DtypeEpsilon(dtype));
    };
    std::string why = ListDifference(check.value("input_fp", Json()), cc->value("input_fp", Json()),
                                     [](size_t) { return 1e-12; }, "input");
    if (why.empty()) why = ListDifference(check.value("ref_fp", Json()), cc->value("ref_fp", Json()), out_tol, "output");
    if (why.empty())
      why = ListDifference(check.value("ref64_fp", Json()), cc->value("ref64_fp", Json()),
                           [](size_t) { return 1e-9; }, "float64 output");
    if (!why.empty()) {
      reasons.push_back(fmt::format(
          "the reference in the candidate's process differs from a clean process's ({}, {}): the candidate changed "
          "what the reference computes (its classes, the torch functions it calls, or its inputs)",
          CheckPlace(check), why));
      break;
    }
  }
  bool task_dist_failed = false;
  for (const auto& check : checks) {
    std::vector<std::string> seed_reasons;
    // A check on the contract's second shape (module-level sizes overridden).
    std::string shape;
    if (check.contains("second_shape") && check["second_shape"].is_object())
      for (const auto& [k, v] : check["second_shape"].items()) shape += fmt::format("{}{}={}", shape.empty() ? "" : " ", k, v.dump());
    if (check.value("inputs_mutated", false))
      seed_reasons.push_back("the candidate modified its inputs (or parameters) during the call");
    Json outs = check.value("outputs", Json::array());
    // The clean process's reference error sets the allowance (the
    // candidate's process could have made its own reference less accurate).
    if (const Json* cc = CleanCheck(check, clean); cc && cc->contains("ref_error") && (*cc)["ref_error"].is_array())
      for (size_t i = 0; i < outs.size() && i < (*cc)["ref_error"].size(); ++i)
        if (outs[i].is_object() && (*cc)["ref_error"][i].is_object()) outs[i]["ref32_vs_ref64"] = (*cc)["ref_error"][i];
    if (outs.size() != bundle.outputs.size() && !bundle.outputs.empty())
      seed_reasons.push_back(fmt::format("the candidate returned {} output(s) but the reference returns {}",
                                         outs.size(), bundle.outputs.size()));
    else
      for (size_t i = 0; i < outs.size(); ++i) JudgeOutput(i, outs[i], bundle, policy, contract, &seed_reasons);
    const std::string dist = check.value("distribution", "task");
    if (dist == "task" && !seed_reasons.empty()) task_dist_failed = true;
    for (auto& r : seed_reasons) {
      std::string where = fmt::format("{}, {}", CheckPlace(check),
                                      check.value("order", "") == "candidate_first" ? "candidate ran first"
                                                                                    : "reference ran first");
      std::string tagged;
      if (dist != "task") {
        tagged = fmt::format("on {} inputs: {} ({}){}", dist, r, where,
                             task_dist_failed ? ""
                                              : "; it passed on the task's own inputs, so it is right only on "
                                                "get_inputs()'s distribution");
      } else if (shape.empty()) {
        tagged = fmt::format("{} ({})", r, where);
      } else {
        tagged = fmt::format("on the contract's second shape ({}): {} ({}){}", shape, r, where,
                             reasons.empty() ? "; it passed on the task's own shape, so it likely hard-codes the shape"
                                             : "");
      }
      // Keep one reason per distinct problem: the first seed that shows it.
      bool seen = std::any_of(reasons.begin(), reasons.end(),
                              [&](const std::string& x) { return x.rfind(r, 0) == 0; });
      if (!seen) reasons.push_back(tagged);
    }
  }
  return reasons;
}

Outcome JudgeTiming(const Json& reply, const TaskBundle& bundle, const VerifyPolicy& policy,
                    const Contract& contract, const CleanFacts* clean) {
  const Json samples = reply.value("samples", Json::object());
  if (!samples.contains("candidate")) return Crashed{"internal", "the worker returned no candidate timings"};
  const Json& cand = samples["candidate"];
  if (cand.contains("error")) return Crashed{"candidate_error", cand.value("error", "")};
  if (std::string t = TamperReason(reply); !t.empty()) return Incorrect{{t}};
  // Timed calls chosen at random after they ran: each must have computed the
  // answer on the inputs it was given, and left them alone.
  std::vector<std::string> timed_notes, timed_warnings;
  if (reply.contains("timed_checks") && reply["timed_checks"].is_object()) {
    const Json& tc = reply["timed_checks"];
    const Json contenders = tc.value("contenders", Json::object());
    for (const auto& [who, c] : contenders.items()) {
      const Json list = c.value("checks", Json::array());
      int calls = c.value("calls", 0);
      for (const auto& check : list) {
        std::vector<std::string> rs;
        if (check.value("inputs_mutated", false)) rs.push_back("it modified its inputs");
        const Json outs = check.value("outputs", Json::array());
        if (outs.size() != bundle.outputs.size() && !bundle.outputs.empty())
          rs.push_back(fmt::format("it returned {} output(s), the reference {}", outs.size(), bundle.outputs.size()));
        else
          for (size_t i = 0; i < outs.size(); ++i) JudgeOutput(i, outs[i], bundle, policy, contract, &rs);
        if (rs.empty()) continue;
        std::string where = fmt::format("timed call {} of {}, one of {} chosen at random after they ran",
                                        check.value("call", 0), calls, list.size());
        if (who == "candidate") {
          std::vector<std::string> reasons;
          for (auto& r : rs)
            reasons.push_back(fmt::format("in {}: {} (it computes otherwise while timed than while checked)", where, r));
          return Incorrect{reasons};
        }
        timed_warnings.push_back(fmt::format("the {} baseline was wrong in {}: {}", who, where, rs.front()));
        break;
      }
      if (who == "candidate" && !list.empty())
        timed_notes.push_back(fmt::format("{} of its {} timed calls, chosen at random after they ran, were checked",
                                          list.size(), calls));
    }
    if (tc.contains("suspicious") && tc["suspicious"].is_object())
      timed_notes.push_back(fmt::format(
          "its time ({:.4g} ms after {} calls) was below {:.0f}% of the reference algorithm's floor ({:.4g} ms), so "
          "its timed calls were checked with probability {:.2f} instead of {:.2f}",
          NumberOr(tc["suspicious"], "median_ms"), tc["suspicious"].value("after_calls", 0),
          100 * NumberOr(tc["suspicious"], "fraction"), NumberOr(tc["suspicious"], "floor_ms"),
          NumberOr(tc["suspicious"], "p"), NumberOr(tc, "p")));
  }
  // After the timed calls, the reference in the candidate's process must
  // still compute what the clean process's does.
  if (clean && reply.contains("ref_probe") && reply["ref_probe"].is_object()) {
    const Json& probe = reply["ref_probe"];
    Json as_check{{"seed", probe.value("seed", -1)}, {"distribution", "task"}};
    if (const Json* cc = CleanCheck(as_check, clean)) {
      const Json ref_error = cc->value("ref_error", Json());
      auto out_tol = [&](size_t i) {
        std::string dtype = i < bundle.outputs.size() ? bundle.outputs[i].dtype : "float32";
        double err = ref_error.is_array() && i < ref_error.size() ? NumberOr(ref_error[i], "rel_l2") : 0;
        return std::max(policy.reference_error_multiple * err, policy.dtype_eps_multiple * DtypeEpsilon(dtype));
      };
      std::string why = ListDifference(probe.value("input_fp", Json()), cc->value("input_fp", Json()),
                                       [](size_t) { return 1e-12; }, "input");
      if (why.empty()) why = ListDifference(probe.value("ref_fp", Json()), cc->value("ref_fp", Json()), out_tol, "output");
      if (!why.empty())
        return Incorrect{{fmt::format(
            "after its timed calls, the reference in the candidate's process computes otherwise than in a clean "
            "process (seed {}, {}): the candidate changed the reference",
            probe.value("seed", -1), why)}};
    }
  }
  if (reply.contains("timing_audit") && reply["timing_audit"].is_object()) {
    // One more call on a timed input set whose contents changed, as before
    // every timed call: the timed calls must compute the answer too.
    std::vector<std::string> reasons;
    const Json outs = reply["timing_audit"].value("outputs", Json::array());
    for (size_t i = 0; i < outs.size(); ++i) JudgeOutput(i, outs[i], bundle, policy, contract, &reasons);
    if (!reasons.empty()) {
      for (auto& r : reasons)
        r += " (in the timed calls: a timed input set whose contents changed between calls; a result cached from "
             "an earlier call would be stale)";
      return Incorrect{reasons};
    }
  }
  Measured m;
  m.time_ms = Summarize(Doubles(cand.value("event_ms", Json::array())));
  m.host_ms = Summarize(Doubles(cand.value("host_ms", Json::array())));
  if (m.time_ms.n == 0) {
    // CPU worker: only the host clock exists.
    m.time_ms = m.host_ms;
  }
  std::vector<double> null_host = Doubles(reply.value("null_host_ms", Json::array()));
  auto summary = [&](const char* who) -> std::optional<SampleSummary> {
    if (!samples.contains(who) || samples[who].contains("error")) return std::nullopt;
    SampleSummary s = Summarize(Doubles(samples[who].value("event_ms", Json::array())));
    std::vector<double> host = Doubles(samples[who].value("host_ms", Json::array()));
    if (s.n == 0) s = Summarize(host);  // the same clock rule as the candidate's: events
    return s.n ? std::optional<SampleSummary>(s) : std::nullopt;
  };
  m.eager_ms = summary("eager");
  m.compile_ms = summary("compile");
  m.notes = timed_notes;
  m.warnings = timed_warnings;
  if (clean) {
    m.clean_eager_ms = clean->eager_ms;
    m.clean_compile_ms = clean->compile_ms;
    // The baselines beside the candidate against the same baselines in a
    // process no candidate touched: much slower beside it means the candidate
    // slowed them (speedups use the faster of the two either way).
    double allowed = clean->host_clock ? policy.reference_slowdown_host : policy.reference_slowdown;
    double allowed_ms = clean->host_clock ? policy.reference_slowdown_host_ms : policy.reference_slowdown_ms;
    auto compare = [&](const char* who, const std::optional<SampleSummary>& mine,
                       const std::optional<SampleSummary>& theirs) -> std::optional<std::string> {
      if (!mine || !theirs || theirs->median <= 0) return std::nullopt;
      double ratio = mine->median / theirs->median;
      if (ratio > 1 + allowed && mine->median - theirs->median > allowed_ms)
        return fmt::format(
            "the {} baseline ran {:.2f}x slower beside the candidate ({:.4g} ms) than in a clean process ({:.4g} ms): "
            "the candidate slowed the reference (its classes, the torch functions it calls, or the device)",
            who, ratio, mine->median, theirs->median);
      return std::nullopt;
    };
    if (auto r = compare("eager", m.eager_ms, m.clean_eager_ms)) return Incorrect{{*r}};
    if (auto r = compare("torch.compile", m.compile_ms, m.clean_compile_ms)) return Incorrect{{*r}};
  }
  const Json energy = reply.value("energy", Json::object());
  if (energy.is_object()) {
    if (energy.contains("candidate") && energy["candidate"].is_object())
      if (double e = NumberOr(energy["candidate"], "mj_per_call", -1); e >= 0) m.energy_mj_per_call = e;
    if (energy.contains("eager") && energy["eager"].is_object())
      if (double e = NumberOr(energy["eager"], "mj_per_call", -1); e >= 0) m.eager_energy_mj_per_call = e;
  }

  bool has_events = !Doubles(cand.value("event_ms", Json::array())).empty();
  if (has_events && !null_host.empty() && m.host_ms.n > 0) {
    // Host time around the call, less what timing a call that does nothing
    // costs (synchronize, event records, clock reads), is the call's true
    // duration as the host sees it. Work on another stream, a non-blocking
    // stream or a host thread is in it but not between the events.
    double null_med = Median(null_host);
    double allowed = std::max(policy.hidden_work_fraction * m.time_ms.median, policy.hidden_work_ms);
    double excess = m.host_ms.median - null_med - m.time_ms.median;
    // The same excess of an honest call timed in the same loop (the
    // reference, on the current stream by construction) is the harness's own
    // share: on the H200 it rose and fell with the candidate's between
    // processes (0.026 vs 0.028 ms in a slow one, 0.009 vs 0.009 in a fast
    // one). It is subtracted, up to the tolerance itself, so an odd reference
    // cannot buy a candidate more than twice the slack.
    double baseline = 0;
    std::string baseline_who;
    for (const char* who : {"eager", "compile"}) {
      if (!samples.contains(who) || samples[who].contains("error")) continue;
      std::vector<double> ev = Doubles(samples[who].value("event_ms", Json::array()));
      std::vector<double> host = Doubles(samples[who].value("host_ms", Json::array()));
      if (ev.empty() || host.empty()) continue;
      baseline = std::clamp(Median(host) - null_med - Median(ev), 0.0, allowed);
      baseline_who = who;
      break;
    }
    double hidden = excess - baseline;
    std::string how = baseline_who.empty()
                          ? fmt::format("host clock {:.4g} ms less {:.4g} ms for timing an empty call, CUDA events "
                                        "{:.4g} ms",
                                        m.host_ms.median, null_med, m.time_ms.median)
                          : fmt::format("host clock {:.4g} ms less {:.4g} ms for timing an empty call, CUDA events "
                                        "{:.4g} ms, less the {:.4g} ms the {} reference shows the same way",
                                        m.host_ms.median, null_med, m.time_ms.median, baseline, baseline_who);
    if (hidden > allowed)
      return Incorrect{{fmt::format(
          "{:.4g} ms of the call ran outside the timed stream ({}): work on another stream, a non-blocking stream "
          "or a host thread is not timed",
          hidden, how)}};
    // Within the tolerance the events rank: the host clock's excess is mostly
    // the jitter of kopt's own Python and ctypes call (measured on the H200:
    // ranking by max(events, host - null) moved one kernel's median by 6.8%
    // between two processes while its events moved 2.1%).
    if (hidden > 0.5 * allowed)
      m.warnings.push_back(fmt::format(
          "the host clock saw {:.4g} ms per call beyond the CUDA events ({}; {:.4g} ms is tolerated before the call "
          "counts as hiding work outside the timed stream)",
          hidden, how, allowed));
  } else if (m.host_ms.n > 0 && has_events) {
    // Recorded replies without a null call: the old warning.
    double gap = m.host_ms.median - m.time_ms.median;
    if (gap > policy.host_gap_ms && gap > policy.host_gap_fraction * m.time_ms.median)
      m.warnings.push_back(fmt::format(
          "the host clock saw {:.4g} ms per call but the CUDA events {:.4g} ms: work may run outside the timed "
          "stream, or host overhead dominates",
          m.host_ms.median, m.time_ms.median));
  }
  // After the clocks are reconciled: the floor judges the ranking time.
  if (bundle.hard_floor_ms > 0 && m.time_ms.median < bundle.hard_floor_ms * (1 - policy.floor_margin))
    return Incorrect{{fmt::format(
        "measured {:.4g} ms per call, below the {:.4g} ms it takes just to read the inputs and write the outputs at "
        "the device's measured bandwidth: the time cannot be real",
        m.time_ms.median, bundle.hard_floor_ms)}};

  if (m.time_ms.RelativeHalfWidth() > 0.05)
    m.warnings.push_back(fmt::format("timing is noisy: the 95% interval of the median is ±{:.1f}%",
                                     100 * m.time_ms.RelativeHalfWidth()));
  return m;
}

}  // namespace kopt
