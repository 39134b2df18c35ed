#include "report/run_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/json.h"
#include "report/diff.h"
#include "report/html_report.h"
#include "report/run_charts.h"
#include "report/svg.h"
#include "report/table.h"
#include "store/run_store.h"

namespace kopt {
namespace {

std::string H(const std::string& s) { return XmlEscape(s); }

std::string Ms(const std::optional<double>& v) { return v ? FormatMs(*v) : "-"; }
std::string X(const std::optional<double>& v) { return v ? FormatRatio(*v) : "-"; }

const char* kRunCss = R"(
section.task { margin-top: 2.4em; } h3 { font-size: 1em; margin: 1.6em 0 0.3em; }
table.kv td:first-child { color: #556; white-space: nowrap; }
.tree-wrap { overflow-x: auto; }
tr.best td { background: #fff6d6; }
table.diff { border-collapse: collapse; width: 100%; table-layout: fixed; font-family: ui-monospace, Menlo, monospace;
             font-size: 0.76em; margin: 0.4em 0; }
table.diff td, table.diff th { border: none; padding: 0 5px; white-space: pre-wrap; word-break: break-all; }
table.diff col.ln { width: 3.2em; } table.diff col.mk { width: 1.2em; }
table.diff td.ln { color: #99a; text-align: right; } table.diff td.mk { color: #556; font-weight: 700; }
table.diff td.add { background: #d5f5dc; } table.diff td.del { background: #fcd9d9; }
table.diff td.none { background: #f7f7fa; }
table.diff tr.gap td { background: #eef0f6; color: #667; text-align: center; font-style: italic; }
table.diff th { background: #f3f4f8; text-align: left; font-family: -apple-system, "Segoe UI", Helvetica, Arial,
                sans-serif; padding: 3px 6px; }
details { margin: 0.4em 0; } details pre { max-height: 32em; overflow: auto; background: #f6f8fc; padding: 0.5em;
                                             font-size: 0.78em; }
.pair { display: grid; grid-template-columns: 1fr 1.3fr; gap: 1em; border-top: 1px solid #e4e6ee;
        padding: 0.6em 0; }
.pair .diag { margin: 0 0 0.4em; }
)";

struct Cell {
  std::string html;  ///< already escaped
  bool num = false;
};
Cell T(const std::string& text) { return {H(text), false}; }
Cell N(const std::string& text) { return {H(text), true}; }

std::string Table(const std::vector<std::string>& headers,
                  const std::vector<std::vector<Cell>>& rows,
                  const std::vector<std::string>& row_classes = {}) {
  std::string s = "<table><thead><tr>";
  for (const auto& h : headers) s += "<th>" + H(h) + "</th>";
  s += "</tr></thead><tbody>";
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string cls = i < row_classes.size() ? row_classes[i] : "";
    s += cls.empty() ? "<tr>" : "<tr class=\"" + cls + "\">";
    for (const auto& c : rows[i])
      s += c.num ? "<td class=\"num\">" + c.html + "</td>" : "<td>" + c.html + "</td>";
    s += "</tr>";
  }
  return s + "</tbody></table>";
}

std::string VerdictHtml(const NodeView& n) {
  const char* cls = n.verdict == "measured"  ? "verdict-good"
                    : n.verdict == "pending" ? "verdict-none"
                                             : "verdict-bad";
  std::string text = VerdictWords(n.verdict);
  if (n.verdict == "crashed" && n.outcome)
    if (const auto* c = std::get_if<Crashed>(&*n.outcome); c && !c->kind.empty())
      text += " (" + c->kind + ")";
  return fmt::format("<span class=\"{}\">{}</span>", cls, H(text));
}

std::string DeviceLine(const std::optional<DeviceInfo>& d) {
  if (!d || d->name.empty()) return "";
  std::string s = d->name;
  if (d->cc_major > 0) s += fmt::format(" (sm_{}{})", d->cc_major, d->cc_minor);
  if (d->sm_count > 0) s += fmt::format(", {} SMs", d->sm_count);
  if (!d->torch_version.empty()) s += ", torch " + d->torch_version;
  return s;
}

std::string RunStatusWords(RunStatus s) {
  switch (s) {
    case RunStatus::kRunning:
      return "running (or stopped without saying so)";
    case RunStatus::kFinished:
      return "finished: the search ended on its own";
    case RunStatus::kBudgetSpent:
      return "stopped: the budget was spent";
    case RunStatus::kInterrupted:
      return "interrupted by the user (resumable)";
    case RunStatus::kFailed:
      return "failed";
  }
  return "unknown";
}

// The time of `node` against its parent's: above 1 when it is faster.
std::optional<double> VsParent(const TaskView& t, const NodeView& n) {
  if (!n.record.parent || !n.time_ms || *n.time_ms <= 0) return std::nullopt;
  const NodeView* p = t.Find(*n.record.parent);
  if (!p || !p->time_ms) return std::nullopt;
  return *p->time_ms / *n.time_ms;
}

std::string DiagnosisHtml(const Diagnosis& d) {
  std::string s = "<div class=\"diag\">";
  s += fmt::format("<span class=\"sev sev-{}\">{}</span> <b>{}</b>", H(d.severity), H(d.severity),
                   H(d.tool));
  s += H(fmt::format(", estimated gain {:.0f}% of the call", 100 * d.CallGain()));
  if (d.call_gain && !d.kernel.empty() && d.kernel != "(call)")
    s += H(fmt::format(" ({:.0f}% of kernel {})", 100 * d.estimated_gain,
                       d.kernel.substr(0, d.kernel.find('('))));
  if (!d.advice.empty()) s += "<p>" + H(d.advice) + "</p>";
  if (!d.evidence.empty()) {
    std::string items;
    for (const auto& [k, v] : d.evidence)
      items += fmt::format("{}{}={:.4g}", items.empty() ? "" : ", ", k, v);
    s += "<div class=\"evidence\">evidence: " + H(items) + "</div>";
  }
  if (!d.suggested_moves.empty()) {
    std::string m;
    for (const auto& x : d.suggested_moves) m += (m.empty() ? "" : ", ") + x;
    s += "<div class=\"note\">suggested moves: " + H(m) + "</div>";
  }
  return s + "</div>";
}

// ---------------------------------------------------------------------------

std::string Header(const RunView& v) {
  const RunRecord& r = v.run;
  std::string s = "<section id=\"run-header\">";
  s += "<h1>" + H("kopt run " + r.id) + "</h1>";
  std::string meta =
      "started " + ShortTime(r.created_at) + ", last written " + ShortTime(r.updated_at);
  if (!DeviceLine(v.device).empty()) meta += " \u00b7 " + DeviceLine(v.device);
  if (!r.kopt_version.empty()) meta += " \u00b7 kopt " + r.kopt_version;
  s += "<p class=\"meta\">" + H(meta) + "</p>";
  int nodes = 0, evaluated = 0;
  for (const auto& t : v.tasks) {
    nodes += static_cast<int>(t.nodes.size());
    evaluated += t.evaluated;
  }
  s += "<div class=\"box\"><b>" + H(RunStatusWords(r.status)) + "</b>";
  if (!r.note.empty()) s += ": " + H(r.note);
  s += H(fmt::format(". {} task{}, {} candidates proposed, {} evaluated.", v.tasks.size(),
                     v.tasks.size() == 1 ? "" : "s", nodes, evaluated));
  s += "</div>";
  std::vector<std::vector<Cell>> rows;
  const RunOptionsView& o = v.options;
  auto row = [&](const std::string& k, const std::string& val) {
    if (!val.empty()) rows.push_back({T(k), T(val)});
  };
  row("proposer (where candidates come from)", o.proposer);
  row("search policy (which node to expand next)", o.search);
  row("objective (what the search minimises)",
      o.objective == "time"              ? "time: median ms per call"
      : o.objective == "energy"          ? "energy: mJ per call"
      : o.objective == "energy-at-speed" ? "energy-at-speed: least energy among the near-fastest"
                                         : o.objective);
  if (o.seed) row("seed", std::to_string(*o.seed));
  row("budget limits", o.budget ? DescribeLimits(*o.budget) : "");
  row("budget spent", DescribeSpent(r.spent));
  std::string argv;
  for (const auto& a : o.argv) argv += (argv.empty() ? "" : " ") + a;
  if (!argv.empty()) rows.push_back({T("command"), {"<code>" + H(argv) + "</code>", false}});
  for (const auto& [k, val] : o.other) row(k, val);
  s += "<table class=\"kv\"><tbody>";
  for (const auto& rr : rows)
    s += "<tr><td>" + rr[0].html + "</td><td>" + rr[1].html + "</td></tr>";
  s += "</tbody></table></section>";
  return s;
}

std::string BudgetSection(const RunView& v) {
  std::string s = "<section id=\"budget\"><h2>Budget</h2>";
  s += BudgetSvg(v.options.budget, v.run.spent);
  s += "<p class=\"note\">Spent as of the last recorded outcome. GPU time is what the evaluations "
       "took on the "
       "device; candidates counts every candidate evaluated, failures included.</p></section>";
  return s;
}

std::string Summary(const RunView& v) {
  std::vector<std::vector<Cell>> rows;
  for (const auto& t : v.tasks) {
    const NodeView* best = t.best ? t.Find(*t.best) : nullptr;
    auto count = [&](const char* verdict) {
      auto it = t.verdicts.find(verdict);
      return it == t.verdicts.end() ? 0 : it->second;
    };
    const int failed = t.evaluated - count("measured");
    rows.push_back({T(t.record.name), T(TaskStatusName(t.record.status)),
                    N(std::to_string(t.nodes.size())), N(std::to_string(t.evaluated)),
                    N(std::to_string(count("measured"))), N(std::to_string(failed)),
                    T(best ? fmt::format("#{}", best->record.id) : "-"),
                    N(best ? Ms(best->time_ms) : "-"), N(best ? X(best->vs_eager) : "-"),
                    N(best ? X(best->vs_compile) : "-"), N(fmt::format("{:.1f}", t.gpu_s))});
  }
  return "<section id=\"summary\"><h2>Tasks</h2>" +
         Table({"task", "status", "candidates", "evaluated", "correct", "failed", "best",
                "best ms per call", "best vs eager", "best vs torch.compile", "GPU s"},
               rows) +
         "</section>";
}

// The side-by-side diff of the best candidate against its parent.
std::string DiffSection(const TaskView& t, int i) {
  std::string s = fmt::format("<div id=\"diff-{}\">", i);
  const NodeView* best = t.best ? t.Find(*t.best) : nullptr;
  const NodeView* parent = best && best->record.parent ? t.Find(*best->record.parent) : nullptr;
  if (!best)
    return s +
           "<p class=\"note\">No candidate was measured correct, so there is no best to "
           "show.</p></div>";
  if (!parent)
    return s +
           "<p class=\"note\">The best candidate is the root: no move improved on it.</p></div>";
  if (best->record.source.empty() || parent->record.source.empty())
    return s + "<p class=\"note\">" +
           H(parent->record.source.empty()
                 ? "The parent is the task's reference: it has no source of ours to "
                   "compare."
                 : "The best candidate's source was not recorded.") +
           "</p></div>";
  std::vector<DiffLine> lines = DiffText(parent->record.source, best->record.source);
  s += "<p>" +
       H(fmt::format(
           "#{} ({}) made from #{} by the move \u201c{}\u201d: {} line{} removed, {} added.",
           best->record.id, best->record.name, parent->record.id, best->record.move,
           CountRemoved(lines), CountRemoved(lines) == 1 ? "" : "s", CountAdded(lines))) +
       "</p>";
  s += "<table class=\"diff\"><colgroup><col class=\"ln\"><col class=\"mk\"><col><col "
       "class=\"ln\"><col "
       "class=\"mk\"><col></colgroup><thead><tr>";
  s += "<th colspan=\"3\">" +
       H(fmt::format("parent #{} \u00b7 {} ms per call", parent->record.id, Ms(parent->time_ms))) +
       "</th>";
  s += "<th colspan=\"3\">" +
       H(fmt::format("best #{} \u00b7 {} ms per call \u00b7 {} vs eager", best->record.id,
                     Ms(best->time_ms), X(best->vs_eager))) +
       "</th></tr></thead><tbody>";
  auto side = [](const DiffLine* l, bool left) {
    if (!l)
      return std::string(
          "<td class=\"ln none\"></td><td class=\"mk none\"></td><td class=\"none\"></td>");
    const bool changed = l->op != DiffOp::kSame;
    const char* cls = !changed ? "" : left ? "del" : "add";
    return fmt::format(
        "<td class=\"ln\">{}</td><td class=\"mk {}\">{}</td><td class=\"{}\">{}</td>",
        left ? l->old_line : l->new_line, cls, changed ? (left ? "\u2212" : "+") : "", cls,
        H(l->text));
  };
  std::vector<DiffHunk> hunks = DiffHunks(lines, 4);
  const int old_total = static_cast<int>(SplitLines(parent->record.source).size());
  int shown_to = 0;  // old lines before this were shown or counted
  for (const auto& h : hunks) {
    const int first_old = h.old_count > 0 ? h.old_start : h.old_start + 1;
    if (first_old - 1 > shown_to)
      s += fmt::format("<tr class=\"gap\"><td colspan=\"6\">{} unchanged line{}</td></tr>",
                       first_old - 1 - shown_to, first_old - 1 - shown_to == 1 ? "" : "s");
    for (size_t k = 0; k < h.lines.size();) {
      if (h.lines[k].op == DiffOp::kSame) {
        s += "<tr>" + side(&h.lines[k], true) + side(&h.lines[k], false) + "</tr>";
        ++k;
        continue;
      }
      std::vector<const DiffLine*> del, add;
      while (k < h.lines.size() && h.lines[k].op != DiffOp::kSame) {
        (h.lines[k].op == DiffOp::kRemoved ? del : add).push_back(&h.lines[k]);
        ++k;
      }
      for (size_t j = 0; j < std::max(del.size(), add.size()); ++j)
        s += "<tr>" + side(j < del.size() ? del[j] : nullptr, true) +
             side(j < add.size() ? add[j] : nullptr, false) + "</tr>";
    }
    shown_to = h.old_start + h.old_count - (h.old_count > 0 ? 1 : 0);
  }
  if (hunks.empty())
    s += "<tr class=\"gap\"><td colspan=\"6\">the two sources are the same line for line</td></tr>";
  else if (old_total > shown_to)
    s += fmt::format("<tr class=\"gap\"><td colspan=\"6\">{} unchanged line{}</td></tr>",
                     old_total - shown_to, old_total - shown_to == 1 ? "" : "s");
  s += "</tbody></table>";
  s += "<p class=\"note\">Left: the parent; right: the best candidate. \u2212 marks a removed line "
       "(red), + an added "
       "one (green); changes are shown with four unchanged lines around them.</p>";
  s += "<details><summary>" + H(fmt::format("the parent's whole source (#{})", parent->record.id)) +
       "</summary><pre>" + H(parent->record.source) + "</pre></details>";
  s += "<details><summary>" +
       H(fmt::format("the best candidate's whole source (#{})", best->record.id)) +
       "</summary><pre>" + H(best->record.source) + "</pre></details>";
  return s + "</div>";
}

// Each diagnosed node beside the moves made from it and how they did.
std::string DiagnosesSection(const TaskView& t, int i) {
  std::string s = fmt::format("<div id=\"diagnoses-{}\">", i);
  int blocks = 0;
  for (const auto& p : t.nodes) {
    if (p.diagnoses.empty()) continue;
    ++blocks;
    s += "<div class=\"pair\"><div>";
    s += "<p><b>" + H(fmt::format("#{} {}", p.record.id, p.record.name)) + "</b> " +
         H(fmt::format("({} ms per call, {} vs eager): its diagnoses", Ms(p.time_ms),
                       X(p.vs_eager))) +
         "</p>";
    for (const auto& d : p.diagnoses) s += DiagnosisHtml(d);
    s += "</div><div>";
    std::vector<std::vector<Cell>> rows;
    for (int c : p.children) {
      const NodeView* n = t.Find(c);
      if (!n) continue;
      std::optional<double> vp = VsParent(t, *n);
      rows.push_back({T(fmt::format("#{}", n->record.id)),
                      T(n->record.move),
                      {VerdictHtml(*n), false},
                      N(Ms(n->time_ms)),
                      N(X(vp))});
    }
    if (rows.empty())
      s += "<p class=\"note\">No move was made from it yet.</p>";
    else
      s +=
          "<p>the moves made from it, and how they did</p>" +
          Table({"node", "move", "verdict", "ms per call", "vs parent (parent ms / its ms)"}, rows);
    s += "</div></div>";
  }
  if (blocks == 0)
    s +=
        "<p class=\"note\">No node of this task was profiled, so no move followed a diagnosis.</p>";
  return s + "</div>";
}

std::string NodesSection(const TaskView& t, int i) {
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> classes;
  for (const auto& n : t.nodes) {
    std::string why = n.reason;
    if (n.verdict == "measured" && !n.diagnoses.empty()) {
      const Diagnosis& d = n.diagnoses.front();
      why = "top diagnosis: " + d.tool;
      why += fmt::format(" (estimated gain {:.0f}% of the call)", 100 * d.CallGain());
      if (!n.reason.empty()) why += "; warning: " + n.reason;
    } else if (n.verdict == "measured" && !n.reason.empty()) {
      why = "warning: " + n.reason;
    }
    rows.push_back({N(std::to_string(n.record.id)),
                    N(n.record.parent ? std::to_string(*n.record.parent) : "-"),
                    N(std::to_string(n.record.depth)),
                    T(n.record.move),
                    {VerdictHtml(n), false},
                    N(Ms(n.time_ms)),
                    N(X(n.vs_eager)),
                    N(X(n.vs_compile)),
                    N(X(VsParent(t, n))),
                    N(n.verdict == "pending" ? "-" : fmt::format("{:.1f}", n.gpu_s)),
                    N(n.seconds ? fmt::format("{:.0f}", *n.seconds) : "-"),
                    T(why)});
    classes.push_back(t.best && *t.best == n.record.id ? "best" : "");
  }
  return fmt::format("<div id=\"nodes-{}\">", i) +
         Table({"#", "parent", "depth", "move", "verdict", "ms per call", "vs eager",
                "vs torch.compile", "vs parent", "GPU s", "at s", "main reason, or top diagnosis"},
               rows, classes) +
         "<p class=\"note\">ms per call: the median of CUDA-event timings with the L2 flushed "
         "before each call. "
         "vs eager and vs torch.compile: the baseline's median over the candidate's, the baselines "
         "timed in the "
         "same session as the candidate (or in a clean process, whichever was faster). vs parent: "
         "the parent's "
         "median over this one's. GPU s: device time its evaluation took. at s: seconds from the "
         "run's start to "
         "its verdict. The highlighted row is the best candidate.</p></div>";
}

std::string TaskSection(const TaskView& t, int i) {
  std::string s = fmt::format("<section class=\"task\" id=\"task-{}\">", i);
  s += "<h2>" + H(fmt::format("Task {}: {}", t.record.index, t.record.name)) + "</h2>";
  const TaskBundle& b = t.record.bundle;
  std::string facts;
  if (!t.record.path.empty()) facts += "<span class=\"mono\">" + H(t.record.path) + "</span>. ";
  std::vector<std::string> base;
  if (b.eager_ms) base.push_back(fmt::format("eager PyTorch {} ms", FormatMs(b.eager_ms->median)));
  if (b.compile_ms)
    base.push_back(fmt::format("torch.compile {} ms", FormatMs(b.compile_ms->median)));
  if (b.floor_ms > 0)
    base.push_back(fmt::format("floor {} ms ({}-bound)", FormatMs(b.floor_ms),
                               b.floor_bound.empty() ? "?" : b.floor_bound));
  if (!base.empty()) {
    std::string joined;
    for (const auto& x : base) joined += (joined.empty() ? "" : ", ") + x;
    facts += H("Per call, measured at capture: " + joined + ". ");
  }
  if (const NodeView* root = t.root ? t.Find(*t.root) : nullptr)
    facts +=
        H(fmt::format("Root #{} ({}): {}{}. ", root->record.id, root->record.name,
                      root->verdict == "measured"
                          ? Ms(root->time_ms) + " ms per call, " + X(root->vs_eager) + " vs eager"
                          : VerdictWords(root->verdict),
                      root->record.kind == NodeKind::kReference ? " (the task's reference)" : ""));
  if (const NodeView* best = t.best ? t.Find(*t.best) : nullptr) {
    facts +=
        "<b>" +
        H(fmt::format("Best #{}: {} ms per call, {} vs eager, {} vs torch.compile", best->record.id,
                      Ms(best->time_ms), X(best->vs_eager), X(best->vs_compile))) +
        "</b>";
    std::string moves;
    for (int id : t.PathTo(best->record.id))
      if (const NodeView* n = t.Find(id); n && n->record.parent)
        moves += (moves.empty() ? "" : " \u2192 ") + fmt::format("#{} [{}]", id, n->record.move);
    facts += H(moves.empty() ? "." : ", from the root by " + moves + ".");
    if (std::string f = t.FinalistsLine(); !f.empty())
      facts +=
          H(" Finalists re-timed together in one worker process (the numbers to quote; the "
            "tree and the table show each candidate's own measurement): " +
            f + ".");
  } else {
    facts += "No candidate was measured correct.";
  }
  std::string counts;
  for (const auto& [verdict, count] : t.verdicts)
    counts += (counts.empty() ? "" : ", ") + fmt::format("{} {}", count, VerdictWords(verdict));
  facts += H(fmt::format(" Candidates: {} ({}); {} GPU s.", t.nodes.size(), counts,
                         fmt::format("{:.1f}", t.gpu_s)));
  s += "<div class=\"box\">" + facts + "</div>";
  // The contract the candidates were held to, with what kopt inferred.
  std::string contract = "<p><b>Contract</b>: " + H(DescribeContract(t.record.contract)) + ".";
  if (!t.record.contract.inferred.empty()) {
    contract += " Inferred from the captured task:</p><ul>";
    for (const std::string& line : t.record.contract.inferred)
      contract += "<li>" + H(line) + "</li>";
    contract += "</ul>";
  } else {
    contract += "</p>";
  }
  s += contract;

  s += "<h3>Search tree</h3>";
  s += fmt::format("<div class=\"tree-wrap\" id=\"tree-{}\">", i) + SearchTreeSvg(t) + "</div>";
  s += "<p class=\"note\">Each circle is a candidate (its node id inside), coloured by its "
       "verdict; under a measured "
       "one, its speedup over eager. An edge is the move that made the child from its parent. "
       "Hover a node for its "
       "move, time, verdict or reason, and diagnoses. A dashed +N box stands for N nodes under "
       "that node not drawn "
       "(the least promising, where the tree is too wide); the table below lists every node.</p>";

  s += "<h3>Best speedup over time</h3>";
  std::string progress = ProgressSvg(t);
  s += fmt::format("<div id=\"progress-{}\">", i) +
       (progress.empty() ? "<p class=\"note\">No candidate was measured correct yet.</p>"
                         : progress) +
       "</div>";
  if (!progress.empty())
    s += "<p class=\"note\">A step up is a candidate faster than every one before it (its node id "
         "above the "
         "mark). Speedups divide the baseline's median by the candidate's, the baselines timed in "
         "the same session "
         "as the candidate.</p>";

  s += "<h3>The best candidate against its parent</h3>" + DiffSection(t, i);
  s += "<h3>What each diagnosis led to</h3>" + DiagnosesSection(t, i);
  s += "<h3>Every candidate</h3>" + NodesSection(t, i);
  return s + "</section>";
}

}  // namespace

std::string RunHtml(const RunView& v, const std::string& store_label) {
  std::string body = Header(v) + BudgetSection(v) + Summary(v);
  for (size_t i = 0; i < v.tasks.size(); ++i) body += TaskSection(v.tasks[i], static_cast<int>(i));
  if (v.tasks.empty()) body += "<p class=\"note\">This run has no tasks recorded yet.</p>";
  return HtmlPage("kopt run " + v.run.id, body,
                  "Written by kopt from run " + v.run.id + " in " + store_label +
                      "; every number here is in that store.",
                  kRunCss);
}

void WriteRunReport(const RunStore& store, const std::string& run, const std::string& store_label,
                    const std::filesystem::path& out) {
  WriteTextFileAtomic(out, RunHtml(RequireRunView(store, run, store_label), store_label));
}

}  // namespace kopt
