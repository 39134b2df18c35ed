#include "report/run_text.h"

#include <algorithm>

#include <fmt/format.h>

#include "report/table.h"

namespace kopt {
namespace {

std::string X(const std::optional<double>& v) { return v ? FormatRatio(*v) : "-"; }
std::string Ms(const std::optional<double>& v) { return v ? FormatMs(*v) : "-"; }

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

}  // namespace

std::string RunsText(const std::vector<RunSummary>& runs) {
  if (runs.empty()) return "";
  Table t({"id", "started", "status", "tasks", "evaluated", "best vs eager (per task)", "spent"});
  t.AlignLeft(0);
  for (const auto& r : runs) {
    int evaluated = 0;
    std::vector<std::string> best;
    for (const auto& task : r.tasks) {
      evaluated += task.outcomes;
      best.push_back(task.name + " " + X(task.best_speedup));
    }
    t.AddRow({r.run.id, ShortTime(r.run.created_at), RunStatusName(r.run.status),
              std::to_string(r.tasks.size()), std::to_string(evaluated),
              best.empty() ? "-" : Join(best, ", "), DescribeSpent(r.run.spent)});
  }
  return t.Render();
}

Json RunsJson(const std::vector<RunSummary>& runs) {
  Json out = Json::array();
  for (const auto& r : runs) {
    Json tasks = Json::array();
    for (const auto& t : r.tasks)
      tasks.push_back(
          {{"index", t.index},
           {"name", t.name},
           {"status", TaskStatusName(t.status)},
           {"nodes", t.nodes},
           {"evaluated", t.outcomes},
           {"best_speedup_vs_eager", t.best_speedup ? Json(*t.best_speedup) : Json(nullptr)}});
    out.push_back({{"id", r.run.id},
                   {"created_at", r.run.created_at},
                   {"updated_at", r.run.updated_at},
                   {"status", RunStatusName(r.run.status)},
                   {"note", r.run.note},
                   {"spent", ToJson(r.run.spent)},
                   {"tasks", tasks}});
  }
  return out;
}

std::string ShowText(const RunView& v, int top) {
  const RunRecord& r = v.run;
  std::string s = fmt::format("run {}: {}{}\n", r.id, RunStatusName(r.status),
                              r.note.empty() ? "" : " (" + r.note + ")");
  std::string started =
      "started " + ShortTime(r.created_at) + ", last written " + ShortTime(r.updated_at);
  if (v.device && !v.device->name.empty()) {
    started += "; " + v.device->name;
    if (!v.device->torch_version.empty()) started += ", torch " + v.device->torch_version;
  }
  s += started + "\n";
  const RunOptionsView& o = v.options;
  std::vector<std::string> opts;
  if (!o.proposer.empty()) opts.push_back("proposer " + o.proposer);
  if (!o.search.empty()) opts.push_back("search " + o.search);
  if (!o.objective.empty()) opts.push_back("objective " + o.objective);
  if (o.seed) opts.push_back(fmt::format("seed {}", *o.seed));
  for (const auto& [k, val] : o.other) opts.push_back(k + " " + val);
  if (!opts.empty()) s += "options: " + Join(opts, ", ") + "\n";
  if (!o.argv.empty()) s += "command: " + Join(o.argv, " ") + "\n";
  s += "budget: limits " + (o.budget ? DescribeLimits(*o.budget) : std::string("not recorded")) +
       "; spent " + DescribeSpent(r.spent) + "\n";

  for (const auto& t : v.tasks) {
    s += fmt::format("\ntask {}: {} ({})", t.record.index, t.record.name,
                     TaskStatusName(t.record.status));
    if (!t.record.path.empty()) s += " " + t.record.path;
    s += "\n";
    const TaskBundle& b = t.record.bundle;
    std::vector<std::string> base;
    if (b.eager_ms) base.push_back("eager " + FormatMs(b.eager_ms->median) + " ms");
    if (b.compile_ms) base.push_back("torch.compile " + FormatMs(b.compile_ms->median) + " ms");
    if (b.floor_ms > 0) base.push_back("floor " + FormatMs(b.floor_ms) + " ms");
    if (!base.empty()) s += "  baselines at capture (per call): " + Join(base, ", ") + "\n";
    if (const NodeView* root = t.root ? t.Find(*t.root) : nullptr) {
      s += fmt::format("  root #{} {}: {}", root->record.id, root->record.name,
                       VerdictWords(root->verdict));
      if (root->time_ms)
        s += fmt::format(", {} ms, {} vs eager", Ms(root->time_ms), X(root->vs_eager));
      s += "\n";
    }
    if (const NodeView* best = t.best ? t.Find(*t.best) : nullptr) {
      s +=
          fmt::format("  best #{} {}: {} ms, {} vs eager, {} vs torch.compile\n", best->record.id,
                      best->record.name, Ms(best->time_ms), X(best->vs_eager), X(best->vs_compile));
      std::vector<std::string> path;
      for (int id : t.PathTo(best->record.id)) {
        const NodeView* n = t.Find(id);
        path.push_back(n->record.parent ? fmt::format("#{} [{}]", id, n->record.move)
                                        : fmt::format("#{}", id));
      }
      s += "    from the root: " + Join(path, ", then ") + "\n";
      if (std::string f = t.FinalistsLine(); !f.empty())
        s += "    finalists re-timed together in one worker: " + f + "\n";
    } else {
      s += "  best: none measured correct\n";
    }
    std::vector<std::string> counts;
    for (const auto& [verdict, count] : t.verdicts)
      counts.push_back(fmt::format("{} {}", count, VerdictWords(verdict)));
    s += fmt::format("  candidates: {} ({}), {} evaluated, {:.1f} GPU s\n", t.nodes.size(),
                     Join(counts, ", "), t.evaluated, t.gpu_s);
    // What the profiled nodes were told, the largest estimated gain of each.
    for (const auto& n : t.nodes) {
      if (!n.profiled) continue;
      if (n.diagnoses.empty()) {
        s += fmt::format("  profiled #{}: no tool found a flaw\n", n.record.id);
        continue;
      }
      const Diagnosis& d = n.diagnoses.front();  // ShownFindings: largest gain first
      std::string advice = d.advice.size() > 140 ? d.advice.substr(0, 137) + "..." : d.advice;
      s += fmt::format("  profiled #{}: {} finding(s); first {} ({}, up to {:.0f}%): {}\n",
                       n.record.id, n.diagnoses.size(), d.tool, d.severity, 100 * d.CallGain(),
                       advice);
    }
    std::vector<const NodeView*> measured;
    for (const auto& n : t.nodes)
      if (n.verdict == "measured" && n.time_ms) measured.push_back(&n);
    std::stable_sort(measured.begin(), measured.end(), [](const NodeView* a, const NodeView* b) {
      return *a->time_ms < *b->time_ms;
    });
    if (!measured.empty() && top > 0) {
      Table table({"#", "parent", "ms", "vs eager", "vs compile", "move"});
      for (size_t i = 0; i < measured.size() && static_cast<int>(i) < top; ++i) {
        const NodeView& n = *measured[i];
        table.AddRow({std::to_string(n.record.id),
                      n.record.parent ? std::to_string(*n.record.parent) : "-", Ms(n.time_ms),
                      X(n.vs_eager), X(n.vs_compile), n.record.move});
      }
      s += fmt::format("  fastest {} of {} measured:\n", std::min<size_t>(measured.size(), top),
                       measured.size());
      std::string rendered = table.Render();
      size_t start = 0;
      while (start < rendered.size()) {
        size_t end = rendered.find('\n', start);
        s += "    " + rendered.substr(start, end - start) + "\n";
        start = end + 1;
      }
    }
  }
  return s;
}

}  // namespace kopt
