#include "report/run_charts.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "report/svg.h"
#include "report/table.h"

namespace kopt {
namespace {

constexpr double kWidth = 760;
// A white outline under a label keeps it readable where it crosses a line.
constexpr const char* kHalo = "stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\"";

std::string F(double v) { return fmt::format("{:.1f}", v); }
std::string E(const std::string& s) { return XmlEscape(s); }

std::string Open(double width, double height, const std::string& title, const std::string& cls) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart {}\" viewBox=\"0 0 {} {}\" "
      "width=\"{}\" "
      "height=\"{}\" role=\"img\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\">"
      "<title>{}</title>",
      cls, F(width), F(height), F(width), F(height), E(title));
}

std::string Text(double x, double y, const std::string& s, const char* anchor = "start",
                 const std::string& attrs = "fill=\"#283040\"") {
  return fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" {}>{}</text>", F(x), F(y), anchor,
                     attrs, E(s));
}

std::string Circle(double x, double y, double r, const std::string& fill,
                   const std::string& extra = "") {
  return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" {}/>", F(x), F(y), F(r),
                     fill, extra);
}

// Roughly how wide a label is at 11px (for laying out legends).
double TextWidth(const std::string& s, double font_px = 11) { return 0.56 * font_px * s.size(); }

// Ticks in [lo, hi] at a 1-2-5 step, at most `max_ticks` of them.
std::vector<double> NiceTicks(double lo, double hi, int max_ticks) {
  std::vector<double> ticks;
  if (!(hi >= lo) || max_ticks < 1) return ticks;
  const double span = std::max(hi - lo, 1e-12);
  double step = std::pow(10.0, std::floor(std::log10(span / max_ticks)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (span / (m * step) <= max_ticks) {
      step *= m;
      break;
    }
  }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return ticks;
}

std::string Speedup(double v) { return fmt::format("{:.2f}x", v); }

std::string HumanSeconds(double s) {
  if (s < 120) return fmt::format("{:.3g} s", s);
  if (s < 7200) return fmt::format("{:.3g} min", s / 60);
  return fmt::format("{:.3g} h", s / 3600);
}

// The hover text of a node: what it is, what made it, how it did.
std::string NodeTitle(const TaskView& task, const NodeView& n, bool best) {
  std::string s = fmt::format("#{} {}", n.record.id, n.record.name);
  if (n.record.parent)
    s += fmt::format(" (child of #{}, depth {})", *n.record.parent, n.record.depth);
  else
    s += " (the root)";
  if (best) s += "; the best candidate";
  if (!n.record.move.empty()) s += "\nmove: " + n.record.move;
  if (!n.record.expected.empty()) s += "\nexpected: " + n.record.expected;
  s += "\nverdict: " + VerdictWords(n.verdict);
  if (n.time_ms) s += fmt::format(", {} ms per call", FormatMs(*n.time_ms));
  if (n.vs_eager) s += ", " + Speedup(*n.vs_eager) + " vs eager";
  if (n.vs_compile) s += ", " + Speedup(*n.vs_compile) + " vs torch.compile";
  if (!n.reason.empty())
    s += "\n" + std::string(n.verdict == "measured" ? "warning: " : "reason: ") + n.reason;
  if (!n.diagnoses.empty()) {
    s += "\ndiagnoses:";
    for (const auto& d : n.diagnoses) {
      s += "\n  " + d.tool + " (" + d.severity;
      s += fmt::format(", estimated gain {:.0f}% of the call", 100 * d.CallGain());
      s += ")";
    }
  }
  return s;
}

}  // namespace

const char* NodeColor(const NodeView& n) {
  if (n.record.kind == NodeKind::kReference) return run_colors::kReference;
  if (n.verdict == "measured")
    return n.vs_eager && *n.vs_eager > 1.0 ? run_colors::kFaster : run_colors::kSlower;
  if (n.verdict == "incorrect") return run_colors::kIncorrect;
  if (n.verdict == "build_failed") return run_colors::kBuildFailed;
  if (n.verdict == "crashed") return run_colors::kCrashed;
  if (n.verdict == "timed_out") return run_colors::kTimedOut;
  return run_colors::kPending;
}

std::string SearchTreeSvg(const TaskView& task, const TreeLayoutOptions& options) {
  if (task.nodes.empty()) return "";
  std::vector<int> best_path = task.best ? task.PathTo(*task.best) : std::vector<int>{};
  auto on_best_path = [&](int id) {
    return std::find(best_path.begin(), best_path.end(), id) != best_path.end();
  };
  std::vector<TreeInputNode> in;
  for (const auto& n : task.nodes) {
    TreeInputNode t;
    t.id = n.record.id;
    t.parent = n.record.parent.value_or(-1);
    t.importance = n.vs_eager.value_or(0);
    t.pinned = on_best_path(n.record.id);
    t.group = VerdictWords(n.verdict);
    in.push_back(std::move(t));
  }
  TreeLayout layout = LayoutTree(in, options);

  // The legend: the colours present, then the best's ring.
  struct Key {
    std::string label;
    const char* color;
  };
  std::vector<Key> keys;
  auto add_key = [&](const char* color, const std::string& label) {
    for (const auto& k : keys)
      if (k.color == color) return;
    keys.push_back({label, color});
  };
  const std::pair<const char*, const char*> kOrder[] = {
      {run_colors::kReference, "reference"},          {run_colors::kFaster, "faster than eager"},
      {run_colors::kSlower, "not faster than eager"}, {run_colors::kIncorrect, "incorrect"},
      {run_colors::kBuildFailed, "build failed"},     {run_colors::kCrashed, "crashed"},
      {run_colors::kTimedOut, "timed out"},           {run_colors::kPending, "not yet evaluated"}};
  for (const auto& [color, label] : kOrder)
    for (const auto& n : task.nodes)
      if (NodeColor(n) == color) {
        add_key(color, label);
        break;
      }
  double legend_w = 0;
  for (const auto& k : keys) legend_w += 22 + TextWidth(k.label) + 12;
  legend_w += 22 + TextWidth("best (ringed; bold edges lead to it)");

  const double legend_h = 34, label_room = 18;
  const double width = std::max({layout.width, legend_w + 16, kWidth});
  const double height = legend_h + layout.height + label_room;
  const double dx = (width - layout.width) / 2, dy = legend_h;
  constexpr double r = 10;

  std::string s = Open(width, height, "Search tree of " + task.record.name, "tree");
  {
    double x = 8;
    for (const auto& k : keys) {
      s += Circle(x + 7, 16, 7, k.color, "stroke=\"#8a93a6\" stroke-width=\"1\"");
      s += Text(x + 18, 20, k.label);
      x += 22 + TextWidth(k.label) + 12;
    }
    s += Circle(x + 7, 16, 7, "#ffffff",
                fmt::format("stroke=\"{}\" stroke-width=\"3\"", run_colors::kBestRing));
    s += Text(x + 18, 20, "best (ringed; bold edges lead to it)");
  }
  std::map<int, const PlacedNode*> placed;
  for (const auto& p : layout.nodes) placed[p.id] = &p;
  auto edge = [&](double px, double py, double cx, double cy, const std::string& attrs) {
    const double my = (py + cy) / 2;
    return fmt::format("<path d=\"M{} {} C{} {} {} {} {} {}\" fill=\"none\" {}/>", F(px + dx),
                       F(py + dy + r), F(px + dx), F(my + dy), F(cx + dx), F(my + dy), F(cx + dx),
                       F(cy + dy - r), attrs);
  };
  // Edges first, under the nodes; the best path last, over the others.
  std::string plain_edges, best_edges;
  for (const auto& p : layout.nodes) {
    if (p.parent < 0 || !placed.count(p.parent)) continue;
    const PlacedNode& q = *placed[p.parent];
    const NodeView* n = task.Find(p.id);
    const bool bold = on_best_path(p.id) && on_best_path(p.parent);
    std::string e = "<g><title>" +
                    E(fmt::format("#{} -> #{}: {}", p.parent, p.id, n->record.move)) + "</title>";
    e += edge(q.x, q.y, p.x, p.y,
              bold ? "stroke=\"#1d3557\" stroke-width=\"2.6\""
                   : "stroke=\"#b7bfcc\" stroke-width=\"1.4\"");
    e += "</g>";
    (bold ? best_edges : plain_edges) += e;
  }
  for (const auto& m : layout.more) {
    if (!placed.count(m.parent)) continue;
    const PlacedNode& q = *placed[m.parent];
    plain_edges += edge(q.x, q.y, m.x, m.y,
                        "stroke=\"#b7bfcc\" stroke-width=\"1.2\" stroke-dasharray=\"3 3\"");
  }
  s += plain_edges + best_edges;
  for (const auto& p : layout.nodes) {
    const NodeView& n = *task.Find(p.id);
    const bool best = task.best && *task.best == p.id;
    const char* fill = NodeColor(n);
    const bool light = fill == run_colors::kPending || fill == run_colors::kSlower;
    const double x = p.x + dx, y = p.y + dy;
    s += "<g class=\"node\"><title>" + E(NodeTitle(task, n, best)) + "</title>";
    if (best)
      s += Circle(x, y, r + 4, "none",
                  fmt::format("stroke=\"{}\" stroke-width=\"4\"", run_colors::kBestRing));
    s += Circle(x, y, r, fill,
                fill == run_colors::kPending ? "stroke=\"#9aa3b5\" stroke-width=\"1.2\"" : "");
    const std::string id = std::to_string(n.record.id);
    s += Text(x, y + 3.2, id, "middle",
              fmt::format("font-size=\"{}\" fill=\"{}\"", id.size() > 2 ? 7.5 : 9,
                          light ? "#1d2330" : "#ffffff"));
    // Under the node, or over a root with children (its edges fan out below).
    const bool above = p.parent < 0 && !n.children.empty();
    if (n.vs_eager)
      s += Text(x, above ? y - r - 5 : y + r + 11, fmt::format("{:.2f}x", *n.vs_eager), "middle",
                std::string("font-size=\"9.5\" fill=\"#283040\" ") + kHalo);
    s += "</g>";
  }
  for (const auto& m : layout.more) {
    std::string what;
    for (const auto& [group, count] : m.by_group)
      what += (what.empty() ? "" : ", ") + fmt::format("{} {}", count, group);
    const double x = m.x + dx, y = m.y + dy;
    s += "<g class=\"more\"><title>" +
         E(fmt::format("{} more node{} under #{}, not drawn: {}", m.hidden,
                       m.hidden == 1 ? "" : "s", m.parent, what)) +
         "</title>";
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"28\" height=\"16\" rx=\"4\" fill=\"#f3f4f8\" "
        "stroke=\"#8a93a6\" "
        "stroke-dasharray=\"3 2\"/>",
        F(x - 14), F(y - 8));
    s += Text(x, y + 3.5, fmt::format("+{}", m.hidden), "middle",
              "font-size=\"9\" fill=\"#283040\"");
    s += "</g>";
  }
  s += "</svg>";
  return s;
}

std::string ProgressSvg(const TaskView& task) {
  std::vector<const ProgressPoint*> pts;
  double lo = 1, hi = 1;
  bool any = false;
  for (const auto& p : task.progress) {
    pts.push_back(&p);
    for (auto v : {p.vs_eager, p.vs_compile})
      if (v) {
        lo = std::min(lo, *v);
        hi = std::max(hi, *v);
        any = true;
      }
  }
  if (!any) return "";
  const double height = 320, left = 62, right = 200, top = 40, bottom = 52;
  const int n = static_cast<int>(task.progress.size());
  Axis x{0.5, n + 0.5, left, kWidth - right, false};
  Axis y{std::max(0.0, lo - 0.08 * (hi - lo) - 0.02), hi + 0.1 * (hi - lo) + 0.02, height - bottom,
         top, false};

  std::string s =
      Open(kWidth, height, "Best speedup so far over eager and over torch.compile", "progress");
  s += Text(8, 18, "Best speedup so far (higher is faster), over the candidates evaluated", "start",
            "font-size=\"13\" font-weight=\"600\" fill=\"#1d2330\"");
  for (double t : NiceTicks(y.lo, y.hi, 8)) {
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e6e8ef\"/>", F(left),
                     F(y.Map(t)), F(kWidth - right), F(y.Map(t)));
    s += Text(left - 6, y.Map(t) + 4, fmt::format("{:.3g}x", t), "end", "fill=\"#667\"");
  }
  for (double t : NiceTicks(1, n, 12)) {
    if (std::fabs(t - std::round(t)) > 1e-9) continue;
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#e6e8ef\"/>",
                     F(x.Map(t)), F(top), F(x.Map(t)), F(height - bottom));
    s += Text(x.Map(t), height - bottom + 15, fmt::format("{:.0f}", t), "middle", "fill=\"#667\"");
  }
  std::string xlabel = "candidates evaluated, in the order their verdicts arrived";
  if (!pts.empty() && pts.back()->seconds)
    xlabel += " (the last " + HumanSeconds(*pts.back()->seconds) + " after the run started)";
  s += Text((left + kWidth - right) / 2, height - 14, xlabel, "middle", "fill=\"#667\"");
  s += fmt::format(
      "<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\" "
      "fill=\"#667\">speedup (x)</text>",
      F((top + height - bottom) / 2));
  if (y.lo <= 1 && 1 <= y.hi) {
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#1d2330\" stroke-dasharray=\"4 "
        "3\"/>",
        F(left), F(y.Map(1)), F(kWidth - right), F(y.Map(1)));
    s += Text(kWidth - right - 4, y.Map(1) - 4, "1x: as fast as the baseline", "end",
              std::string("fill=\"#667\" ") + kHalo);
  }
  // Every measured candidate, then the best-so-far steps over them.
  for (const auto* p : pts) {
    std::string title = fmt::format("#{} (candidate {})", p->node, p->evaluated);
    if (p->vs_eager) title += ": " + Speedup(*p->vs_eager) + " vs eager";
    if (p->vs_compile) title += ", " + Speedup(*p->vs_compile) + " vs torch.compile";
    if (p->vs_compile)
      s += "<g><title>" + E(title) + "</title>" +
           Circle(x.Map(p->evaluated), y.Map(*p->vs_compile), 3, "#f3c9a4") + "</g>";
    if (p->vs_eager)
      s += "<g><title>" + E(title) + "</title>" +
           Circle(x.Map(p->evaluated), y.Map(*p->vs_eager), 3, "#a9c3ee") + "</g>";
  }
  auto steps = [&](auto best_of, const char* color) {
    std::string d;
    for (const auto* p : pts) {
      std::optional<double> b = best_of(*p);
      if (!b) continue;
      d += d.empty() ? fmt::format("M{} {}", F(x.Map(p->evaluated)), F(y.Map(*b)))
                     : fmt::format(" H{} V{}", F(x.Map(p->evaluated)), F(y.Map(*b)));
    }
    if (d.empty()) return std::string();
    d += fmt::format(" H{}", F(x.Map(n + 0.5)));
    return fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"3\"/>", d, color);
  };
  s += steps([](const ProgressPoint& p) { return p.best_vs_compile; }, run_colors::kBestVsCompile);
  s += steps([](const ProgressPoint& p) { return p.best_vs_eager; }, run_colors::kBestVsEager);
  // Where the best over eager moved up: the node that did it.
  int labels = 0;
  double last_label_x = -1e9;
  std::optional<double> last;
  for (const auto* p : pts) {
    if (!p->best_vs_eager || (last && *p->best_vs_eager <= *last)) continue;
    last = p->best_vs_eager;
    const double px = x.Map(p->evaluated), py = y.Map(*p->best_vs_eager);
    s += "<g><title>" +
         E(fmt::format("#{} raised the best over eager to {} (candidate {})", p->node,
                       Speedup(*p->best_vs_eager), p->evaluated)) +
         "</title>" +
         Circle(px, py, 4.5, run_colors::kBestVsEager, "stroke=\"#ffffff\" stroke-width=\"1.5\"");
    if (labels < 12 && px - last_label_x >= 22) {  // ids never overlap
      s += Text(px, py - 8, fmt::format("#{}", p->node), "middle",
                std::string("font-size=\"9.5\" fill=\"#1d2330\" ") + kHalo);
      last_label_x = px;
      ++labels;
    }
    s += "</g>";
  }
  // Legend, right of the plot.
  const double lx = kWidth - right + 14;
  double ly = top + 8;
  auto legend_line = [&](const char* color, const std::string& label) {
    s += fmt::format(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/>", F(lx),
        F(ly), F(lx + 20), F(ly), color);
    s += Text(lx + 26, ly + 4, label);
    ly += 20;
  };
  auto legend_dot = [&](const char* color, const std::string& label) {
    s += Circle(lx + 10, ly, 3, color);
    s += Text(lx + 26, ly + 4, label);
    ly += 20;
  };
  legend_line(run_colors::kBestVsEager, "best so far vs eager");
  legend_line(run_colors::kBestVsCompile, "best so far vs torch.compile");
  legend_dot("#a9c3ee", "a candidate vs eager");
  legend_dot("#f3c9a4", "a candidate vs torch.compile");
  s += "</svg>";
  return s;
}

std::string BudgetSvg(const std::optional<BudgetLimits>& limits, const BudgetSpent& spent) {
  struct Row {
    std::string label;
    double spent, limit;
    std::string spent_text, limit_text;
  };
  const BudgetLimits l = limits.value_or(BudgetLimits{});
  std::vector<Row> rows;
  rows.push_back(
      {"wall time", spent.wall_s, l.wall_s, HumanSeconds(spent.wall_s), HumanSeconds(l.wall_s)});
  rows.push_back(
      {"GPU time", spent.gpu_s, l.gpu_s, HumanSeconds(spent.gpu_s), HumanSeconds(l.gpu_s)});
  rows.push_back({"candidates", static_cast<double>(spent.candidates),
                  static_cast<double>(l.candidates), fmt::format("{}", spent.candidates),
                  fmt::format("{}", l.candidates)});
  if (l.llm_tokens > 0 || spent.llm_tokens > 0)
    rows.push_back({"LLM tokens", static_cast<double>(spent.llm_tokens),
                    static_cast<double>(l.llm_tokens), fmt::format("{}", spent.llm_tokens),
                    fmt::format("{}", l.llm_tokens)});
  if (l.llm_cost_usd > 0 || spent.llm_cost_usd > 0)
    rows.push_back({"LLM cost", spent.llm_cost_usd, l.llm_cost_usd,
                    fmt::format("${:.2f}", spent.llm_cost_usd),
                    fmt::format("${:.2f}", l.llm_cost_usd)});
  const double row_h = 26, top = 30, label_w = 110, track_w = 380;
  const double height = top + row_h * rows.size() + 8;
  std::string s = Open(kWidth, height, "Budget: spent against each limit", "budget");
  s += Text(8, 18, "Budget: what the run spent against each limit", "start",
            "font-size=\"13\" font-weight=\"600\" fill=\"#1d2330\"");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double y = top + row_h * i;
    s += Text(label_w - 8, y + 15, r.label, "end");
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"14\" rx=\"3\" fill=\"#e6e8ef\"/>",
        F(label_w), F(y + 4), F(track_w));
    std::string text;
    if (r.limit > 0) {
      const double frac = r.spent / r.limit;
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"14\" rx=\"3\" fill=\"{}\"/>",
                       F(label_w), F(y + 4), F(track_w * std::clamp(frac, 0.0, 1.0)),
                       frac > 1.0 ? "#d0574f" : run_colors::kBudgetBar);
      text = fmt::format("{} of {} ({:.0f}%)", r.spent_text, r.limit_text, 100 * frac);
    } else {
      text = r.spent_text + " spent (no limit)";
    }
    s += Text(label_w + track_w + 10, y + 15, text);
  }
  s += "</svg>";
  return s;
}

}  // namespace kopt
