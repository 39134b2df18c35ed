#include "report/html_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "report/bench_report.h"
#include "report/svg.h"
#include "report/table.h"
#include "run/runner.h"
#include "task/bundle.h"

namespace kopt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Lenient readers: a report of a partial or older result shows what is there.
const Json& At(const Json& j, const char* key) {
  static const Json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}
// The array at `key`, else an empty one (a reference either way, so pointers
// into it stay valid).
const Json& List(const Json& j, const char* key) {
  static const Json kEmpty = Json::array();
  const Json& v = At(j, key);
  return v.is_array() ? v : kEmpty;
}
double Num(const Json& j, const char* key) {
  const Json& v = At(j, key);
  return v.is_number() ? v.get<double>() : kNaN;
}
std::string Str(const Json& j, const char* key) {
  const Json& v = At(j, key);
  return v.is_string() ? v.get<std::string>() : "";
}
bool Has(double v) { return std::isfinite(v); }

// A finding's share of the whole call it could save (call_gain), else, in a
// record from before that existed, its estimated gain.
double CallGainOf(const Json& d) {
  double g = Num(d, "call_gain");
  return Has(g) ? g : Num(d, "estimated_gain");
}
double Opt(const std::optional<double>& v) { return v ? *v : kNaN; }

std::string H(const std::string& s) { return XmlEscape(s); }

std::string Ms(double v) { return Has(v) ? FormatMs(v) : "-"; }
std::string Ratio(double v) { return Has(v) ? FormatRatio(v) : "-"; }
std::string Percent(double fraction) { return Has(fraction) ? FormatPercent(fraction) : "-"; }

const char* kCss = R"(
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #1d2330; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #dde; }
.meta { color: #556; margin: 0.2em 0 1em; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.6em 0; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e4e6ee; text-align: left; vertical-align: top; }
th { background: #f3f4f8; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict-good { color: #176b2c; font-weight: 600; } .verdict-bad { color: #a4161a; font-weight: 600; }
.verdict-none { color: #778; }
.box { background: #f6f8fc; border-left: 4px solid #3b6fd8; padding: 0.6em 1em; margin: 0.8em 0; }
.diag { border: 1px solid #e0e3ec; border-radius: 6px; padding: 0.5em 1em; margin: 0.6em 0; }
.sev { display: inline-block; padding: 0 0.5em; border-radius: 3px; color: white; font-size: 0.85em; }
.sev-critical { background: #b3261e; } .sev-warning { background: #c77700; } .sev-info { background: #6b7280; }
.evidence { font-family: ui-monospace, Menlo, monospace; font-size: 0.8em; color: #445; }
code, .mono { font-family: ui-monospace, Menlo, monospace; font-size: 0.85em; }
.note { color: #556; font-size: 0.9em; }
svg.chart { display: block; margin: 0.8em 0; max-width: 100%; height: auto; }
)";

std::string Page(const std::string& title, const std::string& body) {
  return HtmlPage(title, body,
                  "Written by kopt from its JSON result; every number here is in that file.");
}

struct Cell {
  std::string html;  ///< already escaped
  bool num = false;
};
Cell T(const std::string& text) { return {H(text), false}; }
Cell N(const std::string& text) { return {H(text), true}; }

std::string HtmlTable(const std::vector<std::string>& headers,
                      const std::vector<std::vector<Cell>>& rows) {
  std::string s = "<table><thead><tr>";
  for (const auto& h : headers) s += "<th>" + H(h) + "</th>";
  s += "</tr></thead><tbody>";
  for (const auto& r : rows) {
    s += "<tr>";
    for (const auto& c : r)
      s += c.num ? "<td class=\"num\">" + c.html + "</td>" : "<td>" + c.html + "</td>";
    s += "</tr>";
  }
  return s + "</tbody></table>";
}

// The reasons a table's [n] marks point to.
std::string NumberedNotes(const std::vector<std::string>& notes) {
  if (notes.empty()) return "";
  std::string s = "<ol class=\"note\">";
  for (const auto& n : notes) s += "<li>" + H(n) + "</li>";
  return s + "</ol>";
}

std::string DeviceLine(const DeviceInfo& d) {
  std::string s = d.name;
  if (d.cc_major || d.cc_minor) s += fmt::format(" (sm_{}{})", d.cc_major, d.cc_minor);
  if (d.sm_count) s += fmt::format(", {} SMs", d.sm_count);
  if (!d.torch_version.empty()) s += ", torch " + d.torch_version;
  return s;
}

std::string DeviceLine(const Json& device) {
  return device.is_object() ? DeviceLine(DeviceInfoFromJson(device)) : "";
}

// The verdict as the terminal says it: "correct", "timed out", "crashed (oom)".
std::string VerdictCell(const std::string& verdict, const std::string& kind = "") {
  const char* cls = verdict == "measured" || verdict == "correct" ? "verdict-good"
                    : verdict == "no solution"                    ? "verdict-none"
                                                                  : "verdict-bad";
  std::string text = verdict == "measured" ? "correct" : verdict;
  std::replace(text.begin(), text.end(), '_', ' ');
  if (!kind.empty() && verdict == "crashed") text += " (" + kind + ")";
  return fmt::format("<span class=\"{}\">{}</span>", cls, H(text));
}

// ---------------------------------------------------------------------------
// kopt bench

std::string BenchBody(const Json& j) {
  std::string title =
      "kopt bench: " + (Str(j, "suite").empty() ? std::string("suite") : Str(j, "suite"));
  std::string s = "<h1>" + H(title) + "</h1>";
  s += "<p class=\"meta\">" + H(DeviceLine(At(j, "device"))) + "</p>";

  int tasks = 0, solutions = 0, correct = 0;
  std::string last_task;
  BarChart vs_eager{
      "Speedup over eager PyTorch (interleaved in one session)", "speedup", {}, true, 1.0, "1x", 0};
  BarChart vs_compile{
      "Speedup over torch.compile (cached baseline)", "speedup", {}, true, 1.0, "1x", 0};
  BarChart of_floor{"Floor time / solution time: how close to the reference algorithm's floor",
                    "percent of the floor",
                    {},
                    false,
                    100.0,
                    "the floor",
                    150};
  std::vector<std::vector<Cell>> table;
  std::vector<std::string> notes;
  for (const auto& row : List(j, "rows")) {
    const BenchRow r = BenchRowFromJson(row);
    if (r.task != last_task) ++tasks;
    last_task = r.task;
    if (!r.solution.empty()) ++solutions;
    if (r.verdict == "measured") ++correct;
    std::string label = r.task + (r.solution.empty() ? "" : " \u00b7 " + r.solution);
    if (r.verdict == "measured") {
      double e = Opt(r.speedup_vs_eager), c = Opt(r.speedup_vs_compile), f = Opt(r.floor_fraction);
      if (Has(e)) vs_eager.bars.push_back({label, e, FormatRatio(e), e >= 1 ? "good" : "bad"});
      if (Has(c)) vs_compile.bars.push_back({label, c, FormatRatio(c), c >= 1 ? "good" : "bad"});
      if (Has(f)) of_floor.bars.push_back({label, 100 * f, FormatPercent(f), "bar"});
    }
    std::string verdict_html = VerdictCell(r.verdict);
    if (!r.reason.empty()) {
      notes.push_back(r.reason);
      verdict_html += fmt::format(" <sup>[{}]</sup>", notes.size());
    }
    table.push_back({T(r.task),
                     T(r.solution.empty() ? "-" : r.solution),
                     N(Ms(Opt(r.eager_ms))),
                     N(Ms(Opt(r.compile_ms))),
                     N(Ms(Opt(r.floor_ms))),
                     N(Ms(Opt(r.time_ms))),
                     N(Ratio(Opt(r.speedup_vs_eager))),
                     N(Ratio(Opt(r.speedup_vs_compile))),
                     N(Percent(Opt(r.floor_fraction))),
                     {verdict_html, false}});
  }
  s += fmt::format("<div class=\"box\">{} tasks, {} solutions, {} measured correct.</div>", tasks,
                   solutions, correct);
  if (!vs_eager.bars.empty()) s += BarChartSvg(vs_eager);
  if (!vs_compile.bars.empty()) s += BarChartSvg(vs_compile);
  if (!of_floor.bars.empty()) {
    s += BarChartSvg(of_floor);
    s +=
        "<p class=\"note\">Above 100%, a solution needs less work than the reference algorithm the "
        "floor is "
        "computed from (an algebraic rewrite); bars stop at 150% and the text gives the value.</p>";
  }
  s += "<h2>All rows</h2>";
  s += HtmlTable({"task", "solution", "eager ms", "compile ms", "floor ms", "ms", "vs eager",
                  "vs compile", "of floor", "verdict"},
                 table);
  s += NumberedNotes(notes);
  s += "<p class=\"note\">Times are medians of CUDA-event timings per call with the L2 flushed "
       "before each call. "
       "Eager is timed interleaved with each solution in the same session; compile is the cached "
       "<code>torch.compile</code> baseline; the floor is the larger of the task's minimum bytes "
       "at the measured "
       "bandwidth and its FLOPs at the measured rates.</p>";
  return s;
}

// ---------------------------------------------------------------------------
// kopt eval

std::string EvalBody(const Json& j) {
  const TaskBundle bundle =
      BundleFromJson(At(j, "bundle").is_object() ? At(j, "bundle") : Json::object());
  std::vector<EvalRecord> records;
  for (const auto& r : List(j, "records"))
    if (r.is_object()) records.push_back(EvalRecordFromJson(r));
  std::string task;
  for (const auto& r : records)
    if (task.empty()) task = r.task_name;
  std::string s = "<h1>" + H("kopt eval: " + (task.empty() ? std::string("task") : task)) + "</h1>";
  s += "<p class=\"meta\">" + H(DeviceLine(At(At(j, "bundle"), "device"))) + "</p>";
  const double floor_ms = bundle.floor_ms > 0 ? bundle.floor_ms : kNaN;
  if (Has(floor_ms))
    s += fmt::format(
        "<div class=\"box\">Floor: {} ms ({}-bound), the reference algorithm's FLOPs and bytes at "
        "this GPU's ceilings. A different algorithm (fewer FLOPs) may beat it; only the hard "
        "floor, "
        "the inputs read and outputs written once, cannot be beaten.</div>",
        H(FormatMs(floor_ms)), H(bundle.floor_bound));

  BarChart times{"Median time per call (candidate and eager, interleaved)",
                 "ms",
                 {},
                 false,
                 std::nullopt,
                 "",
                 0};
  if (Has(floor_ms)) {
    times.reference = floor_ms;
    times.reference_label = "floor";
  }
  std::vector<std::vector<Cell>> table;
  std::vector<std::string> reasons;
  for (const auto& r : records) {
    const Outcome& o = r.outcome;
    std::string verdict = OutcomeName(o);
    const std::string& cand = r.candidate_name;
    const Measured* m = std::get_if<Measured>(&o);
    double med = m ? m->time_ms.median : kNaN;
    double eager = m && m->eager_ms ? m->eager_ms->median : kNaN;
    double speedup = m ? Opt(m->SpeedupVsEager()) : kNaN;
    if (Has(med)) {
      times.bars.push_back(
          {cand, med, FormatMs(med) + " ms", Has(speedup) && speedup >= 1 ? "good" : "bad"});
      if (Has(eager))
        times.bars.push_back(
            {"eager (with " + cand + ")", eager, FormatMs(eager) + " ms", "neutral"});
    }
    std::string ci =
        m ? fmt::format("{} to {}", FormatMs(m->time_ms.ci_low), FormatMs(m->time_ms.ci_high))
          : "-";
    const Crashed* crash = std::get_if<Crashed>(&o);
    std::string verdict_html = VerdictCell(verdict, crash ? crash->kind : "");
    std::string first_reason;
    if (const auto* inc = std::get_if<Incorrect>(&o); inc && !inc->reasons.empty())
      first_reason = inc->reasons[0];
    if (crash) first_reason = crash->message;
    if (verdict != "measured" && !first_reason.empty()) {
      reasons.push_back(cand + ": " + first_reason);
      verdict_html += fmt::format(" <sup>[{}]</sup>", reasons.size());
    }
    table.push_back({T(cand),
                     T(r.candidate_kind),
                     {verdict_html, false},
                     N(Ms(med)),
                     N(ci),
                     N(Ms(eager)),
                     N(Ratio(speedup)),
                     N(Has(med) && Has(floor_ms) && med > 0 ? Percent(floor_ms / med) : "-"),
                     N(fmt::format("{:.2f}", r.source_to_verdict_s))});
  }
  if (!times.bars.empty()) s += BarChartSvg(times);
  s += HtmlTable({"candidate", "kind", "verdict", "median ms", "95% interval", "eager ms",
                  "vs eager", "of floor", "source to verdict s"},
                 table);
  s += NumberedNotes(reasons);
  s += "<p class=\"note\">Each candidate is verified against a float64 truth on several seeds "
       "before it is timed; "
       "eager PyTorch is timed interleaved with it. The interval is a distribution-free 95% "
       "interval of the median "
       "(order statistics of the samples).</p>";
  return s;
}

// ---------------------------------------------------------------------------
// kopt profile

struct Found {
  std::string scope;  ///< "whole call" or the kernel
  const Json* d;
};

std::string UtilizationChart(const Json& util, const std::string& title) {
  BarChart c{title, "percent of peak", {}, false, std::nullopt, "", 0};
  for (const char* unit : {"dram", "l2", "l1_shared", "fp32", "tensor"}) {
    double v = Num(util, unit);
    if (Has(v))
      c.bars.push_back({unit, v, fmt::format("{:.0f}%", v), v >= 60 ? "good" : "neutral"});
  }
  if (c.bars.empty()) return "";
  return BarChartSvg(c);
}

std::string ProfileBody(const Json& j) {
  const Json& ctx = At(j, "context");
  const Json& rep = At(j, "report");
  const Json& call = At(rep, "call");
  std::string s =
      "<h1>" + H("kopt profile: " + Str(j, "task") + " / " + Str(j, "candidate")) + "</h1>";
  s += "<p class=\"meta\">" + H(DeviceLine(At(ctx, "device")));
  if (!Str(j, "kind").empty()) s += H(" \u00b7 " + Str(j, "kind") + " candidate");
  s += "</p>";

  const double time_ms = Num(ctx, "time_ms"), floor_ms = Num(call, "floor_ms"),
               headroom = Num(call, "headroom");
  s += "<div class=\"box\"><b>" +
       H(Str(call, "bound").empty() ? "unclassified" : Str(call, "bound")) + "</b>";
  if (!Str(call, "explanation").empty()) s += ": " + H(Str(call, "explanation"));
  s += "<br>";
  if (Has(time_ms)) s += H(fmt::format("Measured {} ms per call (CUDA events)", FormatMs(time_ms)));
  if (Has(Num(ctx, "host_ms")) && Num(ctx, "host_ms") > 0)
    s += H(fmt::format(", host clock {} ms", FormatMs(Num(ctx, "host_ms"))));
  if (Has(floor_ms) && floor_ms > 0) {
    s += H(fmt::format(". Floor {} ms ({}-bound)", FormatMs(floor_ms), Str(call, "floor_bound")));
    if (Has(headroom) && headroom > 0)
      s += H(fmt::format(": the call takes {:.2f}x the floor", headroom));
  }
  s += ".";
  if (!Str(At(j, "outcome"), "summary").empty())
    s += "<br>Verdict: " + H(Str(At(j, "outcome"), "summary"));
  s += "</div>";

  // The roofline: the task's FLOPs over its minimum DRAM bytes, at the
  // achieved rate; the roof above it is kopt's floor.
  const Json& ceil = At(ctx, "ceilings");
  const double flops = Num(ctx, "flops"), min_bytes = Num(ctx, "min_bytes");
  RooflineChart roof;
  roof.title = "Roofline (this GPU's ceilings)";
  roof.bandwidth_bytes_per_s = Num(ceil, "bandwidth_bytes_per_s");
  const Json& by = At(ctx, "flops_by_precision");
  const std::pair<const char*, const char*> kRates[] = {{"fp32", "fp32_flops_per_s"},
                                                        {"tf32", "tf32_flops_per_s"},
                                                        {"bf16", "bf16_flops_per_s"},
                                                        {"fp16", "fp16_flops_per_s"}};
  for (const auto& [precision, key] : kRates) {
    bool used = Has(Num(by, precision)) && Num(by, precision) > 0;
    if (std::string(precision) == "fp32" || used)
      roof.ceilings.push_back({precision, Num(ceil, key)});
  }
  if (Has(flops) && flops > 0 && Has(min_bytes) && min_bytes > 0 && Has(time_ms) && time_ms > 0)
    roof.points.push_back({"this call", flops / min_bytes, flops / (time_ms / 1e3)});
  std::string roof_svg = RooflineSvg(roof);
  s += "<h2>Where it sits</h2>";
  if (!roof_svg.empty()) {
    s += roof_svg;
    s += "<p class=\"note\">Intensity is the task's FLOPs over the bytes it must move through DRAM "
         "at least "
         "once; for work in one precision the roof at that intensity is the floor, and the dashed "
         "drop is the "
         "headroom above. "
         "The bandwidth roof is the best of kopt's copy and fill probes on this GPU; each compute "
         "roof is the "
         "larger of its matmul probe and the per-clock peak at this GPU's SM count and clock.</p>";
  } else {
    s += "<p class=\"note\">No roofline: the task has no FLOPs to place on one (or the ceilings "
         "are missing); "
         "the utilization below tells where the time goes.</p>";
  }
  s += UtilizationChart(At(call, "utilization"), "Utilization of each unit over the call (ncu)");

  // Every diagnosis, most valuable first.
  std::vector<Found> found;
  for (const auto& d : List(rep, "call_diagnoses")) found.push_back({"whole call", &d});
  const Json& kernels = At(rep, "kernels");
  for (const auto& k : List(rep, "kernels"))
    for (const auto& d : List(k, "diagnoses")) found.push_back({Str(k, "kernel"), &d});
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    double ga = CallGainOf(*a.d), gb = CallGainOf(*b.d);
    return (Has(ga) ? ga : 0) > (Has(gb) ? gb : 0);
  });
  s += fmt::format("<h2>Diagnoses ({})</h2>", found.size());
  if (found.empty()) s += "<p>No analysis tool found anything worth changing.</p>";
  BarChart gains{"Estimated gain of each diagnosis (share of the whole call's time it could save)",
                 "percent",
                 {},
                 false,
                 std::nullopt,
                 "",
                 0};
  for (const auto& f : found) {
    double g = CallGainOf(*f.d);
    if (Has(g))
      gains.bars.push_back({Str(*f.d, "tool"), 100 * g, fmt::format("{:.0f}%", 100 * g), "bar"});
  }
  if (gains.bars.size() > 1) s += BarChartSvg(gains);
  for (const auto& f : found) {
    const Json& d = *f.d;
    std::string sev = Str(d, "severity");
    s += "<div class=\"diag\">";
    s += fmt::format(
        "<span class=\"sev sev-{}\">{}</span> <b>{}</b> on <span class=\"mono\">{}</span>", H(sev),
        H(sev), H(Str(d, "tool")), H(f.scope));
    if (Has(CallGainOf(d))) {
      s += H(fmt::format(", estimated gain {:.0f}% of the call", 100 * CallGainOf(d)));
      if (Has(Num(d, "call_gain")) && Has(Num(d, "estimated_gain")) && f.scope != "whole call")
        s += H(fmt::format(" ({:.0f}% of this kernel)", 100 * Num(d, "estimated_gain")));
    }
    s += "<p>" + H(Str(d, "advice")) + "</p>";
    const Json& ev = At(d, "evidence");
    if (ev.is_object() && !ev.empty()) {
      std::string items;
      for (auto it = ev.begin(); it != ev.end(); ++it)
        items += (items.empty() ? "" : ", ") + it.key() + "=" +
                 (it->is_number() ? fmt::format("{:.4g}", it->get<double>()) : it->dump());
      s += "<div class=\"evidence\">evidence: " + H(items) + "</div>";
    }
    const Json& moves = At(d, "suggested_moves");
    if (moves.is_array() && !moves.empty()) {
      std::string m;
      for (const auto& x : moves)
        if (x.is_string()) m += (m.empty() ? "" : ", ") + x.get<std::string>();
      s += "<div class=\"note\">moves: " + H(m) + "</div>";
    }
    s += "</div>";
  }

  // Kernels.
  if (kernels.is_array() && !kernels.empty()) {
    s += "<h2>Kernels</h2>";
    std::vector<std::vector<Cell>> rows;
    for (const auto& k : kernels) {
      const Json& r = At(k, "roofline");
      const Json& u = At(r, "utilization");
      auto pct = [&](const char* unit) {
        return Has(Num(u, unit)) ? fmt::format("{:.0f}%", Num(u, unit)) : "-";
      };
      rows.push_back({{"<span class=\"mono\">" + H(Str(k, "kernel")) + "</span>", false},
                      N(Has(Num(k, "launches")) ? fmt::format("{:.0f}", Num(k, "launches")) : "-"),
                      N(Ms(Num(k, "mean_ms"))),
                      T(Str(r, "bound")),
                      N(pct("dram")),
                      N(pct("l2")),
                      N(pct("l1_shared")),
                      N(pct("fp32")),
                      N(pct("tensor")),
                      T(Str(r, "explanation"))});
    }
    s += HtmlTable({"kernel", "launches profiled", "ms per launch", "class", "DRAM", "L2",
                    "L1/shared", "FP32", "tensor", "why"},
                   rows);
  }

  // The champion's source-level counters.
  const Json& hot = At(j, "hotspots");
  if (hot.is_object()) {
    s += "<h2>Hottest instructions (source counters)</h2>";
    if (!Str(hot, "error").empty()) {
      s += "<p class=\"note\">" + H(Str(hot, "error")) + "</p>";
    } else {
      const double total = Num(hot, "total_samples");
      std::vector<std::vector<Cell>> rows;
      for (const auto& l : List(hot, "top")) {
        double n = Num(l, "stall_samples"), r = Num(l, "top_reason_samples");
        std::string why = Str(l, "top_reason");
        if (!why.empty() && Has(r) && n > 0) why += fmt::format(" ({:.0f}%)", 100 * r / n);
        if (Str(l, "top_reason") == "drain" && Num(l, "executed") == 0)
          why += ": warps done, stores draining";
        rows.push_back(
            {N(Has(total) && total > 0 && Has(n) ? fmt::format("{:.1f}%", 100 * n / total) : "-"),
             {"<span class=\"mono\">" + H(Str(l, "address")) + "</span>", false},
             {"<span class=\"mono\">" + H(Str(l, "source")) + "</span>", false},
             T(why),
             N(Has(Num(l, "executed")) ? fmt::format("{:.0f}", Num(l, "executed")) : "-")});
      }
      s += HtmlTable({"share of stall samples", "address", "SASS", "main stall reason", "executed"},
                     rows);
      s += "<p class=\"note\">A line is where warps waited, not always what made them wait: the "
           "diagnoses "
           "above name the cause.</p>";
    }
  }

  // The timeline of a multi-kernel call.
  const Json& tl = At(j, "timeline");
  if (tl.is_object()) {
    s += "<h2>Timeline (per call)</h2>";
    std::vector<std::vector<Cell>> rows;
    auto row = [&](const char* what, const char* key, const char* unit) {
      double v = Num(tl, key);
      if (Has(v)) rows.push_back({T(what), N(fmt::format("{:.4g}{}", v, unit))});
    };
    row("kernel launches", "kernel_launches_per_call", "");
    row("kernel time", "kernel_ms_per_call", " ms");
    row("GPU idle between kernels", "gap_ms_per_call", " ms");
    row("copies", "copies_per_call", "");
    row("host synchronisations", "syncs_per_call", "");
    row("host clock", "host_ms", " ms");
    s += HtmlTable({"what", "value"}, rows);
  }

  // What each tier cost.
  const Json& tiers = At(j, "tier_seconds");
  if (tiers.is_object() && !tiers.empty()) {
    std::vector<std::vector<Cell>> rows;
    for (auto it = tiers.begin(); it != tiers.end(); ++it)
      if (it->is_number())
        rows.push_back({T(it.key()), N(fmt::format("{:.1f} s", it->get<double>()))});
    s += "<h2>Profiling cost</h2>" + HtmlTable({"tier", "seconds"}, rows);
  }
  const Json& notes = At(rep, "notes");
  if (notes.is_array() && !notes.empty()) {
    s += "<ul class=\"note\">";
    for (const auto& n : notes)
      if (n.is_string()) s += "<li>" + H(n.get<std::string>()) + "</li>";
    s += "</ul>";
  }
  return s;
}

}  // namespace

std::string HtmlPage(const std::string& title, const std::string& body,
                     const std::string& closing_note, const std::string& extra_css) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
      "charset=\"utf-8\"><title>{}</title><style>{}{}</style>"
      "</head><body>\n{}\n<p class=\"note\">{}</p></body></html>\n",
      H(title), kCss, extra_css, body, H(closing_note));
}

std::optional<ReportKind> DetectReportKind(const Json& j) {
  if (!j.is_object()) return std::nullopt;
  if (j.contains("rows") && j["rows"].is_array()) return ReportKind::kBench;
  if (j.contains("records") && j["records"].is_array()) return ReportKind::kEval;
  if (j.contains("report") && j["report"].is_object() && j.contains("context"))
    return ReportKind::kProfile;
  return std::nullopt;
}

std::string BenchHtml(const Json& j) { return Page("kopt bench " + Str(j, "suite"), BenchBody(j)); }
std::string EvalHtml(const Json& j) { return Page("kopt eval", EvalBody(j)); }
std::string ProfileHtml(const Json& j) {
  return Page("kopt profile " + Str(j, "task") + " " + Str(j, "candidate"), ProfileBody(j));
}

std::string RenderHtmlReport(const Json& j) {
  auto kind = DetectReportKind(j);
  if (!kind)
    throw Error(
        "this JSON is not a kopt result: pass a file written by kopt bench, eval or profile with "
        "--json.");
  switch (*kind) {
    case ReportKind::kBench:
      return BenchHtml(j);
    case ReportKind::kEval:
      return EvalHtml(j);
    case ReportKind::kProfile:
      return ProfileHtml(j);
  }
  return "";
}

void WriteHtmlReport(const std::filesystem::path& path, const Json& j) {
  WriteTextFileAtomic(path, RenderHtmlReport(j));
}

}  // namespace kopt
