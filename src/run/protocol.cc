#include "run/protocol.h"

namespace kopt {
namespace {

// Lenient readers: what the reply holds at `key` when it has the expected
// type, else the fallback (or nothing).
const Json* Field(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::optional<double> OptNum(const Json& j, const char* key) {
  const Json* v = Field(j, key);
  if (!v || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

double Num(const Json& j, const char* key, double fallback = 0) {
  return OptNum(j, key).value_or(fallback);
}

std::optional<long long> OptInt(const Json& j, const char* key) {
  const Json* v = Field(j, key);
  if (!v || !v->is_number()) return std::nullopt;
  return v->is_number_integer() ? v->get<long long>() : static_cast<long long>(v->get<double>());
}

long long Int(const Json& j, const char* key, long long fallback = 0) {
  return OptInt(j, key).value_or(fallback);
}

bool Bool(const Json& j, const char* key, bool fallback = false) {
  const Json* v = Field(j, key);
  return v && v->is_boolean() ? v->get<bool>() : fallback;
}

std::optional<bool> OptBool(const Json& j, const char* key) {
  const Json* v = Field(j, key);
  if (!v || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

std::optional<std::string> OptStr(const Json& j, const char* key) {
  const Json* v = Field(j, key);
  if (!v || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::string Str(const Json& j, const char* key, const std::string& fallback = "") {
  return OptStr(j, key).value_or(fallback);
}

const Json& Array(const Json& j, const char* key) {
  static const Json kEmpty = Json::array();
  const Json* v = Field(j, key);
  return v && v->is_array() ? *v : kEmpty;
}

const Json* Object(const Json& j, const char* key) {
  const Json* v = Field(j, key);
  return v && v->is_object() ? v : nullptr;
}

// The numbers of a list; anything else in it is left out.
std::vector<double> Numbers(const Json& j, const char* key) {
  std::vector<double> v;
  for (const auto& x : Array(j, key))
    if (x.is_number()) v.push_back(x.get<double>());
  return v;
}

std::optional<std::vector<long long>> OptInts(const Json& j, const char* key) {
  const Json* v = Field(j, key);
  if (!v || !v->is_array()) return std::nullopt;
  std::vector<long long> out;
  for (const auto& x : *v)
    if (x.is_number())
      out.push_back(x.is_number_integer() ? x.get<long long>()
                                          : static_cast<long long>(x.get<double>()));
  return out;
}

std::vector<std::string> Strings(const Json& j, const char* key) {
  std::vector<std::string> v;
  for (const auto& x : Array(j, key))
    if (x.is_string()) v.push_back(x.get<std::string>());
  return v;
}

// Per-element optional numbers (null where the worker could not measure).
std::vector<std::optional<double>> OptNumbers(const Json& j, const char* key) {
  std::vector<std::optional<double>> v;
  for (const auto& x : Array(j, key))
    v.push_back(x.is_number() ? std::optional<double>(x.get<double>()) : std::nullopt);
  return v;
}

// A `tampered` list: names, anything else as its JSON text.
std::optional<std::vector<std::string>> Tampered(const Json& j) {
  const Json* v = Field(j, "tampered");
  if (!v || !v->is_array()) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& n : *v) names.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  return names;
}

std::optional<ErrorStats> OptStats(const Json& j, const char* key) {
  const Json* v = Object(j, key);
  if (!v) return std::nullopt;
  return ParseErrorStats(*v);
}

Fingerprints ParseFingerprints(const Json& j, const char* key) {
  const Json* v = Field(j, key);
  if (!v || !v->is_array()) return std::nullopt;
  std::vector<Fingerprint> out;
  for (const auto& f : *v) out.push_back(ParseFingerprint(f));
  return out;
}

Json FingerprintsJson(const Fingerprints& fps) {
  if (!fps) return nullptr;
  Json a = Json::array();
  for (const auto& f : *fps) a.push_back(ToJson(f));
  return a;
}

std::optional<SecondShape> ParseSecondShape(const Json& j) {
  const Json* v = Object(j, "second_shape");
  if (!v) return std::nullopt;
  SecondShape s;
  for (const auto& [k, x] : v->items())
    if (x.is_number())
      s[k] = x.is_number_integer() ? x.get<long long>() : static_cast<long long>(x.get<double>());
  return s;
}

std::vector<OutputCheck> Outputs(const Json& j) {
  std::vector<OutputCheck> v;
  for (const auto& o : Array(j, "outputs")) v.push_back(ParseOutputCheck(o));
  return v;
}

OutputStats ParseOutputStats(const Json& j) {
  OutputStats s;
  s.mean = Num(j, "mean");
  s.std = Num(j, "std");
  s.max_abs = Num(j, "max_abs");
  s.numel = OptNum(j, "numel");
  s.nan = Num(j, "nan");
  s.inf = Num(j, "inf");
  return s;
}

std::vector<OutputStats> StatsList(const Json& list) {
  std::vector<OutputStats> v;
  if (list.is_array())
    for (const auto& s : list) v.push_back(ParseOutputStats(s));
  return v;
}

TensorSpec Tensor(const Json& j, const std::string& default_role) {
  return TensorSpecFromJson(j, default_role);
}

std::map<std::string, double> Counts(const Json& j, const char* key) {
  std::map<std::string, double> m;
  if (const Json* v = Object(j, key))
    for (const auto& [name, count] : v->items())
      m[name] = count.is_number() ? count.get<double>() : 0;
  return m;
}

CeilingProbe ParseProbe(const Json& j) {
  CeilingProbe p;
  p.probe = Str(j, "probe");
  p.dtype = Str(j, "dtype");
  p.bytes_per_s = OptNum(j, "bytes_per_s");
  p.flops_per_s = OptNum(j, "flops_per_s");
  p.tensor_bytes = OptNum(j, "tensor_bytes");
  p.n = OptNum(j, "n");
  p.error = Str(j, "error");
  return p;
}

}  // namespace

ErrorStats ParseErrorStats(const Json& j) {
  ErrorStats s;
  s.max_abs = OptNum(j, "max_abs");
  s.rel_l2 = OptNum(j, "rel_l2");
  s.worst_ratio = OptNum(j, "worst_ratio");
  s.ref64_max_abs = OptNum(j, "ref64_max_abs");
  return s;
}

Fingerprint ParseFingerprint(const Json& j) {
  Fingerprint f;
  if (!j.is_object()) return f;
  f.present = true;
  if (j.contains("type")) f.type = Str(j, "type");
  f.shape = OptInts(j, "shape").value_or(std::vector<long long>{});
  f.dtype = Str(j, "dtype");
  f.numel = Num(j, "numel");
  f.nan = Num(j, "nan");
  f.inf = Num(j, "inf");
  f.sum = Num(j, "sum");
  f.abs_sum = Num(j, "abs_sum");
  f.sq_sum = Num(j, "sq_sum");
  for (const auto& x : Array(j, "samples"))
    f.samples.push_back(x.is_number() ? x.get<double>() : 0);
  return f;
}

OutputCheck ParseOutputCheck(const Json& j) {
  OutputCheck o;
  o.shape = OptInts(j, "shape");
  o.ref_shape = OptInts(j, "ref_shape");
  o.dtype = OptStr(j, "dtype");
  o.shape_ok = Bool(j, "shape_ok");
  o.dtype_ok = Bool(j, "dtype_ok");
  o.exact_tensor = OptBool(j, "exact_tensor");
  o.aliases_input = Bool(j, "aliases_input");
  o.extra = Bool(j, "extra");
  o.nan = Int(j, "nan");
  o.inf = Int(j, "inf");
  o.poison_left = Int(j, "poison_left");
  o.vs_ref32 = OptStats(j, "vs_ref32");
  o.vs_ref64 = OptStats(j, "vs_ref64");
  o.ref32_vs_ref64 = OptStats(j, "ref32_vs_ref64");
  o.reflowp_vs_ref64 = OptStats(j, "reflowp_vs_ref64");
  o.rerun_rel_diff = OptNum(j, "rerun_rel_diff");
  o.ref_max_abs = OptNum(j, "ref_max_abs");
  o.precision = Str(j, "precision");
  return o;
}

SandboxReport ParseSandboxReport(const Json& j) {
  SandboxReport s;
  s.network = OptStr(j, "network");
  s.filesystem = OptStr(j, "filesystem");
  s.seccomp = OptStr(j, "seccomp");
  s.scratch = Str(j, "scratch");
  s.writable = Strings(j, "writable");
  s.devices = Strings(j, "devices");
  s.order = Str(j, "order");
  s.details = Strings(j, "details");
  return s;
}

HelloReply ParseHelloReply(const Json& j) {
  HelloReply h;
  h.device = DeviceInfoFromHello(j.is_object() ? j : Json::object());
  h.cuda = Str(j, "cuda");
  h.python = Str(j, "python");
  h.pid = Int(j, "pid");
  if (const Json* s = Object(j, "sandbox")) h.sandbox = ParseSandboxReport(*s);
  return h;
}

CaptureReply ParseCaptureReply(const Json& j) {
  CaptureReply c;
  if (const Json* sig = Object(j, "signature")) {
    for (const auto& t : Array(*sig, "inputs")) c.inputs.push_back(Tensor(t, "input"));
    for (const auto& t : Array(*sig, "outputs")) c.outputs.push_back(Tensor(t, "output"));
    c.n_forward_inputs = static_cast<int>(Int(*sig, "n_forward_inputs"));
    c.training = Bool(*sig, "training");
  }
  if (const Json* g = Object(j, "graph")) {
    c.graph = *g;
    c.flops = Num(*g, "flops");
    if (const Json* by = Object(*g, "flops_by_class")) c.matrix_flops = Num(*by, "matrix");
    // cuDNN's convolutions and fused RNNs may use TF32 under torch's defaults.
    for (const auto& n : Array(*g, "nodes")) {
      const std::string op = Str(n, "op");
      if (op.find("convolution") != std::string::npos || op.find("_cudnn_rnn") != std::string::npos)
        c.conv_flops += Num(n, "flops");
    }
  }
  c.min_bytes = Num(j, "min_bytes");
  for (const auto& k : Array(j, "kernels"))
    c.kernels.push_back({Str(k, "name"), Num(k, "calls"), Num(k, "device_ms")});
  if (const Json* e = Field(j, "ref_error")) c.ref_error = *e;
  for (const auto& per_seed : Array(j, "outputs_stats"))
    c.outputs_stats.push_back(StatsList(per_seed));
  c.seed_rel_diff = OptNumbers(j, "seed_rel_diff");
  c.repeat_rel_diff = OptNumbers(j, "repeat_rel_diff");
  if (const Json* ds = Object(j, "distributions"))
    for (const auto& [name, d] : ds->items()) {
      CaptureDistribution f;
      f.about = Str(d, "about");
      f.finite = Bool(d, "finite");
      f.changes_inputs = Bool(d, "changes_inputs");
      f.error = Str(d, "error");
      f.outputs_stats = StatsList(Array(d, "outputs_stats"));
      c.distributions[name] = f;
    }
  if (const Json* u = Field(j, "uncounted_ops"); u && u->is_array()) {
    std::vector<std::string> ops;
    for (const auto& op : *u)
      if (op.is_string()) ops.push_back(op.get<std::string>());
    c.uncounted_ops = ops;
  }
  return c;
}

EvaluateReply ParseEvaluateReply(const Json& j) {
  EvaluateReply r;
  for (const auto& c : Array(j, "checks")) {
    EvaluateCheck check;
    check.seed = OptInt(c, "seed");
    check.distribution = Str(c, "distribution", "task");
    check.order = Str(c, "order");
    check.inputs_mutated = Bool(c, "inputs_mutated");
    check.mutated_inputs = Strings(c, "mutated_inputs");
    for (const auto& e : Array(c, "state")) {
      StateCheck sc;
      sc.name = Str(e, "name");
      sc.ok = Bool(e, "ok");
      sc.max_abs_err = OptNum(e, "max_abs_err");
      sc.unchanged = Bool(e, "unchanged");
      sc.why = Str(e, "why");
      sc.unchecked = Str(e, "unchecked");
      check.state.push_back(std::move(sc));
    }
    check.outputs = Outputs(c);
    check.candidate_ms = OptNum(c, "candidate_ms");
    check.second_shape = ParseSecondShape(c);
    check.input_fp = ParseFingerprints(c, "input_fp");
    check.ref_fp = ParseFingerprints(c, "ref_fp");
    check.ref64_fp = ParseFingerprints(c, "ref64_fp");
    r.checks.push_back(std::move(check));
  }
  if (const Json* ops = Object(j, "torch_ops")) {
    TorchOps t;
    t.candidate = Counts(*ops, "candidate");
    t.reference = Counts(*ops, "reference");
    t.candidate_forwards = OptNum(*ops, "candidate_forwards");
    r.torch_ops = t;
  }
  r.tampered = Tampered(j);
  r.load_ms = OptNum(j, "load_ms");
  r.weights_copied = Bool(j, "weights_copied");
  r.ref64_failure = Str(j, "ref64_failure");
  return r;
}

TimeReply ParseTimeReply(const Json& j) {
  TimeReply r;
  if (const Json* samples = Object(j, "samples"))
    for (const auto& [who, s] : samples->items()) {
      ContenderSamples c;
      c.event_ms = Numbers(s, "event_ms");
      c.host_ms = Numbers(s, "host_ms");
      if (Field(s, "error")) c.error = Str(s, "error");
      c.error_kind = Str(s, "error_kind");
      r.samples[who] = std::move(c);
    }
  r.null_host_ms = Numbers(j, "null_host_ms");
  if (const Json* a = Object(j, "timing_audit")) {
    TimingAudit audit;
    audit.seed = OptInt(*a, "seed");
    audit.input_set = Int(*a, "input_set");
    audit.outputs = Outputs(*a);
    r.timing_audit = std::move(audit);
  }
  if (const Json* tc = Object(j, "timed_checks")) {
    TimedChecks t;
    t.p = Num(*tc, "p");
    if (const Json* s = Object(*tc, "suspicious"))
      t.suspicious = SuspiciousTime{Num(*s, "median_ms"), Num(*s, "floor_ms"), Num(*s, "fraction"),
                                    Num(*s, "p"), Int(*s, "after_calls")};
    if (const Json* cs = Object(*tc, "contenders"))
      for (const auto& [who, c] : cs->items()) {
        TimedContender tcn;
        tcn.calls = Int(c, "calls");
        for (const auto& check : Array(c, "checks"))
          tcn.checks.push_back({Int(check, "call"), Int(check, "input_set"), OptInt(check, "seed"),
                                Bool(check, "inputs_mutated"), Outputs(check)});
        t.contenders[who] = std::move(tcn);
      }
    r.timed_checks = std::move(t);
  }
  r.tampered = Tampered(j);
  if (const Json* p = Object(j, "ref_probe"))
    r.ref_probe = ReferenceProbe{OptInt(*p, "seed"), ParseFingerprints(*p, "input_fp"),
                                 ParseFingerprints(*p, "ref_fp")};
  if (const Json* e = Object(j, "energy")) {
    r.energy.emplace();
    for (const auto& [who, x] : e->items())
      (*r.energy)[who] = x.is_object()
                             ? std::optional<EnergyReading>(EnergyReading{
                                   OptNum(x, "mj_per_call"), Int(x, "calls"), Num(x, "window_s")})
                             : std::nullopt;
  }
  if (const Json* m = Object(j, "meta"))
    r.meta = TimingMeta{Str(*m, "stop"), Int(*m, "rounds"), Num(*m, "elapsed_s"), Str(*m, "clock")};
  r.load_ms = OptNum(j, "load_ms");
  return r;
}

ReferenceReply ParseReferenceReply(const Json& j) {
  ReferenceReply r;
  for (const auto& c : Array(j, "checks")) {
    ReferenceCheck check;
    check.seed = OptInt(c, "seed");
    check.distribution = Str(c, "distribution", "task");
    check.second_shape = ParseSecondShape(c);
    check.input_fp = ParseFingerprints(c, "input_fp");
    check.ref_fp = ParseFingerprints(c, "ref_fp");
    check.ref64_fp = ParseFingerprints(c, "ref64_fp");
    if (const Json* e = Field(c, "ref_error"); e && e->is_array()) {
      check.ref_error.emplace();
      for (const auto& x : *e)
        check.ref_error->push_back(x.is_object() ? std::optional<ErrorStats>(ParseErrorStats(x))
                                                 : std::nullopt);
    }
    check.finite = Bool(c, "finite");
    r.checks.push_back(std::move(check));
  }
  return r;
}

CeilingsReply ParseCeilingsReply(const Json& j) {
  CeilingsReply r;
  for (const auto& p : Array(j, "bandwidth")) r.bandwidth.push_back(ParseProbe(p));
  for (const auto& p : Array(j, "matmul")) r.matmul.push_back(ParseProbe(p));
  return r;
}

Json ToJson(const ErrorStats& s) {
  Json j = Json::object();
  if (s.max_abs) j["max_abs"] = *s.max_abs;
  if (s.rel_l2) j["rel_l2"] = *s.rel_l2;
  if (s.worst_ratio) j["worst_ratio"] = *s.worst_ratio;
  if (s.ref64_max_abs) j["ref64_max_abs"] = *s.ref64_max_abs;
  return j;
}

Json ToJson(const Fingerprint& f) {
  if (!f.present) return nullptr;
  if (f.type) return Json{{"type", *f.type}};
  return Json{{"shape", f.shape},     {"dtype", f.dtype},   {"numel", f.numel},
              {"nan", f.nan},         {"inf", f.inf},       {"sum", f.sum},
              {"abs_sum", f.abs_sum}, {"sq_sum", f.sq_sum}, {"samples", f.samples}};
}

Json ToJson(const SandboxReport& s) {
  Json j{{"scratch", s.scratch},
         {"writable", s.writable},
         {"devices", s.devices},
         {"order", s.order},
         {"details", s.details}};
  if (s.network) j["network"] = *s.network;
  if (s.filesystem) j["filesystem"] = *s.filesystem;
  if (s.seccomp) j["seccomp"] = *s.seccomp;
  return j;
}

Json ToJson(const ReferenceReply& r) {
  Json checks = Json::array();
  for (const auto& c : r.checks) {
    Json j{{"distribution", c.distribution},
           {"input_fp", FingerprintsJson(c.input_fp)},
           {"ref_fp", FingerprintsJson(c.ref_fp)},
           {"ref64_fp", FingerprintsJson(c.ref64_fp)},
           {"finite", c.finite}};
    if (c.seed) j["seed"] = *c.seed;
    if (c.second_shape) j["second_shape"] = *c.second_shape;
    if (c.ref_error) {
      Json e = Json::array();
      for (const auto& s : *c.ref_error) e.push_back(s ? ToJson(*s) : Json());
      j["ref_error"] = e;
    } else {
      j["ref_error"] = nullptr;
    }
    checks.push_back(std::move(j));
  }
  return Json{{"checks", checks}};
}

Json ToJson(const CeilingsReply& r) {
  // A probe that failed has a null rate, as the worker writes it.
  auto probes = [](const std::vector<CeilingProbe>& list, const char* rate) {
    Json a = Json::array();
    for (const auto& p : list) {
      Json j{{"probe", p.probe}};
      if (!p.dtype.empty()) j["dtype"] = p.dtype;
      const std::optional<double>& value =
          std::string(rate) == "bytes_per_s" ? p.bytes_per_s : p.flops_per_s;
      j[rate] = value ? Json(*value) : Json();
      if (p.tensor_bytes) j["tensor_bytes"] = *p.tensor_bytes;
      if (p.n) j["n"] = *p.n;
      if (!p.error.empty()) j["error"] = p.error;
      a.push_back(std::move(j));
    }
    return a;
  };
  return Json{{"bandwidth", probes(r.bandwidth, "bytes_per_s")},
              {"matmul", probes(r.matmul, "flops_per_s")}};
}

}  // namespace kopt
