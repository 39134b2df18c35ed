#include "report/run_view.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "core/error.h"
#include "report/table.h"

namespace kopt {
namespace {

std::string FirstLine(const std::string& s) {
  size_t start = s.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  size_t end = s.find('\n', start);
  std::string line = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string Clip(std::string s, size_t max_chars = 240) {
  if (s.size() > max_chars) s = s.substr(0, max_chars - 3) + "...";
  return s;
}

std::string MainReason(const Outcome& o) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, BuildFailed>) {
          return BuildFailureReason(v.log);
        } else if constexpr (std::is_same_v<T, Incorrect>) {
          return v.reasons.empty() ? "outputs differ" : v.reasons.front();
        } else if constexpr (std::is_same_v<T, Crashed>) {
          return v.kind + (v.message.empty() ? "" : ": " + FirstLine(v.message));
        } else if constexpr (std::is_same_v<T, TimedOut>) {
          return fmt::format("no verdict after {:.1f} s in {}", v.after_s, v.phase);
        } else {
          return v.warnings.empty() ? "" : v.warnings.front();
        }
      },
      o);
}

// A profile's findings as the reports show them: largest share of the
// whole call first, those without a tool's name left out.
std::vector<Diagnosis> ShownFindings(std::vector<Diagnosis> ds) {
  std::erase_if(ds, [](const Diagnosis& d) { return d.tool.empty(); });
  SortByCallGain(&ds);
  return ds;
}

RunOptionsView ReadOptions(const Json& o) {
  RunOptionsView v;
  if (!o.is_object()) return v;
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& k = it.key();
    const Json& x = *it;
    if (k == "proposer" && x.is_string())
      v.proposer = x.get<std::string>();
    else if (k == "search" && x.is_string())
      v.search = x.get<std::string>();
    else if (k == "objective" && x.is_string())
      v.objective = x.get<std::string>();
    else if (k == "seed" && x.is_number_integer())
      v.seed = x.get<long long>();
    else if (k == "budget" && x.is_object())
      v.budget = BudgetLimitsFromJson(x);
    else if (k == "argv" && x.is_array()) {
      for (const auto& a : x) v.argv.push_back(a.is_string() ? a.get<std::string>() : a.dump());
    } else if (!x.is_null() && !(x.is_string() && x.get<std::string>().empty()) &&
               !(x.is_array() && x.empty()) && !(x.is_object() && x.empty())) {
      v.other.emplace_back(k, x.is_string() ? x.get<std::string>() : x.dump());
    }
  }
  return v;
}

std::optional<DeviceInfo> ReadDevice(const Json& d) {
  if (!d.is_object() || d.empty()) return std::nullopt;
  // ToJson(DeviceInfo) is the `device` of a worker's hello with the torch
  // version inside it.
  DeviceInfo info = DeviceInfoFromHello(Json{{"device", d}, {"torch", d.value("torch", "")}});
  if (!d.contains("name")) info.name.clear();
  return info;
}

std::optional<double> Finite(std::optional<double> v) {
  if (v && std::isfinite(*v)) return v;
  return std::nullopt;
}

TaskView ReadTask(const RunStore& store, const RunRecord& run, const TaskRecord& task) {
  TaskView t;
  t.record = task;
  std::vector<OutcomeRecord> outcomes = store.ListOutcomes(run.id, task.index);
  std::vector<ProfileRecord> profiles = store.ListProfiles(run.id, task.index);
  std::map<int, const OutcomeRecord*> outcome_of;
  for (const auto& o : outcomes) outcome_of[o.node] = &o;
  std::map<int, const ProfileRecord*> profile_of;
  for (const auto& p : profiles) profile_of[p.node] = &p;

  for (auto& n : store.ListNodes(run.id, task.index)) {
    NodeView v;
    v.record = std::move(n);
    if (auto it = outcome_of.find(v.record.id); it != outcome_of.end()) {
      const OutcomeRecord& o = *it->second;
      v.verdict = o.verdict;
      v.outcome = OutcomeFromJson(o.outcome);
      v.gpu_s = o.gpu_s;
      v.finished_at = o.finished_at;
      v.objective = Finite(o.objective);
      v.energy_mj = Finite(o.energy_mj);
      v.seconds = SecondsBetween(run.created_at, o.finished_at);
      if (const auto* m = std::get_if<Measured>(&*v.outcome)) {
        v.time_ms = Finite(m->time_ms.median);
        v.vs_eager = Finite(SpeedupVsEager(*m, task.bundle));
        v.vs_compile = Finite(SpeedupVsCompile(*m, task.bundle));
        if (!v.energy_mj) v.energy_mj = Finite(m->energy_mj_per_call);
      }
      if (!v.time_ms) v.time_ms = Finite(o.time_ms);
      if (!v.vs_eager) v.vs_eager = Finite(o.speedup);
      v.reason = Clip(MainReason(*v.outcome));
    }
    if (auto it = profile_of.find(v.record.id); it != profile_of.end()) {
      v.profiled = true;
      v.diagnoses = ShownFindings(it->second->diagnoses);
    }
    t.nodes.push_back(std::move(v));
  }
  std::sort(t.nodes.begin(), t.nodes.end(),
            [](const NodeView& a, const NodeView& b) { return a.record.id < b.record.id; });
  std::map<int, size_t> at;
  for (size_t i = 0; i < t.nodes.size(); ++i) at[t.nodes[i].record.id] = i;
  for (auto& n : t.nodes) {  // ascending id: node 0 is the root when there is one
    ++t.verdicts[n.verdict];
    t.gpu_s += n.gpu_s;
    if (n.record.parent && at.count(*n.record.parent)) {
      t.nodes[at[*n.record.parent]].children.push_back(n.record.id);
    } else if (!n.record.parent && !t.root) {
      t.root = n.record.id;
    }
  }

  // The order verdicts arrived in, and the best so far.
  std::vector<NodeView*> done;
  for (auto& n : t.nodes)
    if (n.verdict != "pending") done.push_back(&n);
  std::stable_sort(done.begin(), done.end(), [](const NodeView* a, const NodeView* b) {
    if (a->finished_at != b->finished_at) return a->finished_at < b->finished_at;
    return a->record.id < b->record.id;
  });
  t.evaluated = static_cast<int>(done.size());
  std::optional<double> best_e, best_c;
  for (size_t i = 0; i < done.size(); ++i) {
    NodeView& n = *done[i];
    n.order = static_cast<int>(i);
    ProgressPoint p;
    p.evaluated = static_cast<int>(i) + 1;
    p.node = n.record.id;
    p.seconds = n.seconds;
    p.vs_eager = n.vs_eager;
    p.vs_compile = n.vs_compile;
    if (n.vs_eager && (!best_e || *n.vs_eager > *best_e)) {
      best_e = n.vs_eager;
      p.improved = true;
    }
    if (n.vs_compile && (!best_c || *n.vs_compile > *best_c)) {
      best_c = n.vs_compile;
      p.improved = true;
    }
    p.best_vs_eager = best_e;
    p.best_vs_compile = best_c;
    t.progress.push_back(p);
  }

  if (task.best_node && t.Find(*task.best_node)) {
    t.best = task.best_node;
  } else {
    const NodeView* best = nullptr;
    for (const auto& n : t.nodes) {
      if (n.verdict != "measured") continue;
      auto key = [](const NodeView& x) {
        return std::make_pair(x.objective.value_or(INFINITY), x.time_ms.value_or(INFINITY));
      };
      if (!best || key(n) < key(*best)) best = &n;
    }
    if (best) t.best = best->record.id;
  }
  return t;
}

Json Opt(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

std::string TaskView::FinalistsLine() const {
  std::string out;
  for (const auto& f : record.finalists) {
    if (!f.is_object() || !f.contains("time_ms") || !f["time_ms"].is_number()) continue;
    std::string part =
        fmt::format("#{} {} {} ms", f.value("node", -1), f.value("name", std::string()),
                    FormatMs(f["time_ms"].get<double>()));
    if (f.contains("speedup_vs_eager") && f["speedup_vs_eager"].is_number())
      part += fmt::format(", {:.2f}x vs eager", f["speedup_vs_eager"].get<double>());
    if (f.value("winner", false)) part += " (winner)";
    out += (out.empty() ? "" : "; ") + part;
  }
  return out;
}

const NodeView* TaskView::Find(int id) const {
  auto it = std::lower_bound(nodes.begin(), nodes.end(), id,
                             [](const NodeView& n, int v) { return n.record.id < v; });
  return it != nodes.end() && it->record.id == id ? &*it : nullptr;
}

std::vector<int> TaskView::PathTo(int id) const {
  std::vector<int> path;
  for (const NodeView* n = Find(id); n && path.size() <= nodes.size();
       n = n->record.parent ? Find(*n->record.parent) : nullptr)
    path.push_back(n->record.id);
  std::reverse(path.begin(), path.end());
  return path;
}

std::optional<RunView> LoadRunView(const RunStore& store, const std::string& id_or_prefix) {
  std::optional<RunRecord> run = store.FindRun(id_or_prefix);
  if (!run) return std::nullopt;
  RunView v;
  v.run = *run;
  v.options = ReadOptions(run->options);
  v.device = ReadDevice(run->device);
  for (const auto& task : store.ListTasks(run->id)) v.tasks.push_back(ReadTask(store, *run, task));
  return v;
}

std::string VerdictWords(const std::string& verdict) {
  if (verdict == "measured") return "correct";
  if (verdict == "pending") return "not yet evaluated";
  std::string s = verdict;
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

RunView RequireRunView(const RunStore& store, const std::string& id_or_prefix,
                       const std::string& store_label) {
  std::optional<RunView> v = LoadRunView(store, id_or_prefix);
  if (!v)
    throw Error(
        fmt::format("No run in {} has an id starting with '{}': `kopt runs --store {}` lists them.",
                    store_label, id_or_prefix, store_label));
  return *std::move(v);
}

namespace {

std::optional<std::chrono::system_clock::time_point> ParseIso(const std::string& s) {
  int y, mo, d, h, mi;
  double sec;
  char z = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%c", &y, &mo, &d, &h, &mi, &sec, &z) != 7 ||
      z != 'Z')
    return std::nullopt;
  using namespace std::chrono;
  year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)}, day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  return sys_days{ymd} + hours{h} + minutes{mi} +
         duration_cast<system_clock::duration>(duration<double>(sec));
}

}  // namespace

std::optional<double> SecondsBetween(const std::string& from, const std::string& to) {
  auto a = ParseIso(from), b = ParseIso(to);
  if (!a || !b) return std::nullopt;
  return std::chrono::duration<double>(*b - *a).count();
}

std::string ShortTime(const std::string& iso) {
  if (!ParseIso(iso) || iso.size() < 16) return iso;
  return iso.substr(0, 10) + " " + iso.substr(11, 5) + " UTC";
}

Json ToJson(const RunView& v) {
  Json run{{"id", v.run.id},
           {"created_at", v.run.created_at},
           {"updated_at", v.run.updated_at},
           {"status", RunStatusName(v.run.status)},
           {"note", v.run.note},
           {"kopt_version", v.run.kopt_version},
           {"options", v.run.options},
           {"device", v.run.device},
           {"spent", ToJson(v.run.spent)}};
  Json tasks = Json::array();
  for (const auto& t : v.tasks) {
    const TaskBundle& b = t.record.bundle;
    Json task{{"index", t.record.index},
              {"name", t.record.name},
              {"path", t.record.path},
              {"status", TaskStatusName(t.record.status)},
              {"node_count", t.nodes.size()},
              {"evaluated", t.evaluated},
              {"verdicts", t.verdicts},
              {"gpu_s", t.gpu_s},
              {"eager_ms", b.eager_ms ? Json(b.eager_ms->median) : Json(nullptr)},
              {"compile_ms", b.compile_ms ? Json(b.compile_ms->median) : Json(nullptr)},
              {"floor_ms", b.floor_ms > 0 ? Json(b.floor_ms) : Json(nullptr)},
              {"root", t.root ? Json(*t.root) : Json(nullptr)}};
    if (t.best) {
      const NodeView* n = t.Find(*t.best);
      Json moves = Json::array();
      for (int id : t.PathTo(*t.best))
        if (const NodeView* p = t.Find(id); p && p->record.parent) moves.push_back(p->record.move);
      task["best"] = {{"node", *t.best},
                      {"path", t.PathTo(*t.best)},
                      {"moves", moves},
                      {"name", n->record.name},
                      {"time_ms", Opt(n->time_ms)},
                      {"speedup_vs_eager", Opt(n->vs_eager)},
                      {"speedup_vs_compile", Opt(n->vs_compile)}};
    } else {
      task["best"] = nullptr;
    }
    Json nodes = Json::array();
    for (const auto& n : t.nodes) {
      Json diagnoses = Json::array();
      for (const auto& d : n.diagnoses)
        diagnoses.push_back(
            {{"tool", d.tool}, {"severity", d.severity}, {"estimated_gain", d.estimated_gain}});
      nodes.push_back({{"id", n.record.id},
                       {"parent", n.record.parent ? Json(*n.record.parent) : Json(nullptr)},
                       {"depth", n.record.depth},
                       {"move", n.record.move},
                       {"proposer", n.record.proposer},
                       {"name", n.record.name},
                       {"kind", NodeKindName(n.record.kind)},
                       {"verdict", n.verdict},
                       {"time_ms", Opt(n.time_ms)},
                       {"speedup_vs_eager", Opt(n.vs_eager)},
                       {"speedup_vs_compile", Opt(n.vs_compile)},
                       {"gpu_s", n.gpu_s},
                       {"seconds", Opt(n.seconds)},
                       {"reason", n.reason},
                       {"diagnoses", diagnoses}});
    }
    task["nodes"] = nodes;
    tasks.push_back(task);
  }
  run["tasks"] = tasks;
  return run;
}

}  // namespace kopt
