#include "diagnose/profile_session.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "profile/static_profile.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::set<BoundClass> ClassesOf(const DiagnosisReport& r) {
  std::set<BoundClass> s;
  for (const auto& k : r.kernels) s.insert(k.roofline.bound);
  return s;
}

}  // namespace

Json ToJson(const ProfileContext& c) {
  return Json{{"device", ToJson(c.device)},
              {"ceilings", ToJson(c.ceilings)},
              {"calls_profiled", c.calls_profiled},
              {"time_ms", c.time_ms},
              {"host_ms", c.host_ms},
              {"min_bytes", c.min_bytes},
              {"latency_ms", c.latency_ms},
              {"flops", c.flops},
              {"matrix_flops", c.matrix_flops},
              {"flops_by_precision", c.flops_by_precision},
              {"contract_precision", c.contract_precision},
              {"matrix_precision", c.matrix_precision}};
}

ProfileContext ProfileContextFromJson(const Json& j) {
  ProfileContext c;
  c.device = DeviceInfoFromJson(j.at("device"));
  c.ceilings = CeilingsFromJson(j.at("ceilings"));
  c.calls_profiled = j.value("calls_profiled", 1);
  c.time_ms = j.value("time_ms", 0.0);
  c.host_ms = j.value("host_ms", 0.0);
  c.min_bytes = j.value("min_bytes", 0.0);
  c.latency_ms = j.value("latency_ms", 0.0);
  c.flops = j.value("flops", 0.0);
  c.matrix_flops = j.value("matrix_flops", 0.0);
  c.contract_precision = j.value("contract_precision", "");
  c.matrix_precision = j.value("matrix_precision", "");
  if (j.contains("flops_by_precision"))
    c.flops_by_precision = j["flops_by_precision"].get<std::map<std::string, double>>();
  return c;
}

void SaveProfile(const ProfileData& d, const fs::path& dir) {
  fs::create_directories(dir);
  Json res = Json::array();
  for (const auto& r : d.resources) res.push_back(ToJson(r));
  WriteJsonFileAtomic(dir / "profile.json", Json{{"task", d.task_name},
                                                 {"candidate", d.candidate_name},
                                                 {"kind", d.candidate_kind},
                                                 {"context", ToJson(d.context)},
                                                 {"resources", res},
                                                 {"timeline", d.timeline},
                                                 {"outcome", d.outcome},
                                                 {"tier_seconds", d.tier_seconds},
                                                 {"notes", d.notes}});
  auto write = [&](const char* name, const std::string& text) {
    if (text.empty()) return;
    std::ofstream f(dir / name, std::ios::binary);
    f << text;
  };
  write("sass.txt", d.sass_text);
  write("ncu_tier1.csv", d.ncu_tier1);
  write("ncu_tier2.csv", d.ncu_tier2);
  write("ncu_source.csv", d.ncu_source);
}

static ProfileData ProfileFromJson(const Json& j, const fs::path& dir);

ProfileData LoadProfile(const fs::path& dir) {
  if (!fs::exists(dir / "profile.json"))
    throw Error(dir.string() +
                " holds no profile.json: pass a folder written by kopt profile --save");
  Json j = ReadJsonFile(dir / "profile.json");
  try {
    return ProfileFromJson(j, dir);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error((dir / "profile.json").string() + " is not a profile kopt wrote (" + e.what() +
                "): profile the candidate again with kopt profile --save");
  }
}

static ProfileData ProfileFromJson(const Json& j, const fs::path& dir) {
  ProfileData d;
  d.task_name = j.value("task", "");
  d.candidate_name = j.value("candidate", "");
  d.candidate_kind = j.value("kind", "");
  d.context = ProfileContextFromJson(j.at("context"));
  for (const auto& r : j.value("resources", Json::array()))
    d.resources.push_back(KernelResourcesFromJson(r));
  d.timeline = j.value("timeline", Json());
  d.outcome = j.value("outcome", Json());
  for (const auto& n : j.value("notes", Json::array())) d.notes.push_back(n.get<std::string>());
  if (j.contains("tier_seconds"))
    d.tier_seconds = j["tier_seconds"].get<std::map<std::string, double>>();
  auto read = [&](const char* name) {
    return fs::exists(dir / name) ? ReadTextFile(dir / name) : std::string();
  };
  d.sass_text = read("sass.txt");
  d.ncu_tier1 = read("ncu_tier1.csv");
  d.ncu_tier2 = read("ncu_tier2.csv");
  d.ncu_source = read("ncu_source.csv");
  return d;
}

DiagnosisReport DiagnoseProfileData(const ProfileData& d, const fs::path& data_dir) {
  NcuReport ncu = ParseNcuCsv(d.ncu_tier1);
  if (!d.ncu_tier2.empty()) MergeNcuReports(&ncu, ParseNcuCsv(d.ncu_tier2));
  StaticReport sr = MergeStatic(d.resources, ParseSass(d.sass_text));
  ProfileContext ctx = d.context;
  if (d.timeline.is_object()) {  // the timeline tier's per-call figures
    ctx.gap_ms = d.timeline.value("gap_ms_per_call", -1.0);
    ctx.copies = d.timeline.value("copies_per_call", -1.0);
    ctx.syncs = d.timeline.value("syncs_per_call", -1.0);
    ctx.launches = d.timeline.value("kernel_launches_per_call", -1.0);
    ctx.kernel_ms = d.timeline.value("kernel_ms_per_call", -1.0);
  }
  Thresholds thresholds = LoadThresholds(data_dir / "thresholds.json");
  RooflineThresholds roofline = LoadRooflineThresholds(data_dir / "roofline.json");
  DiagnosisReport report = DiagnoseProfile(ncu, sr, ctx, BuiltinTools(), thresholds, roofline);
  report.notes.insert(report.notes.begin(), d.notes.begin(), d.notes.end());
  return report;
}

namespace {

Json HotspotsJson(const std::string& csv) {
  if (csv.empty()) return nullptr;
  SourceHotspots h = ParseSourcePage(csv);
  Json top = Json::array();
  for (const auto& l : h.top)
    top.push_back(Json{{"address", l.address},
                       {"source", l.source},
                       {"stall_samples", l.stall_samples},
                       {"executed", l.executed},
                       {"top_reason", l.top_reason},
                       {"top_reason_samples", l.top_reason_samples}});
  Json j{{"total_samples", h.total_samples}, {"stall_column", h.stall_column}, {"top", top}};
  if (!h.error.empty()) j["error"] = h.error;
  return j;
}

}  // namespace

Json ToJson(const ProfileData& d, const DiagnosisReport& r) {
  return Json{{"task", d.task_name},
              {"candidate", d.candidate_name},
              {"kind", d.candidate_kind},
              {"context", ToJson(d.context)},
              {"outcome", d.outcome},
              {"timeline", d.timeline},
              {"tier_seconds", d.tier_seconds},
              {"report", ToJson(r)},
              {"hotspots", HotspotsJson(d.ncu_source)}};
}

void RunProfileTiers(Profiler& profiler, const ProfileTarget& target,
                     std::vector<BuildResult> objects, const TierOptions& o,
                     const fs::path& data_dir, ProfileData* d) {
  auto progress = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  // Tier 1 (or everything at once).
  TierMetrics tiers = LoadTierMetrics(data_dir / "tiers.json");
  std::vector<std::string> first_metrics = tiers.tier1;
  if (o.one_pass) {
    std::set<BoundClass> all;
    for (int c = 0; c <= static_cast<int>(BoundClass::kSmallGrid); ++c)
      all.insert(static_cast<BoundClass>(c));
    for (const auto& m : Tier2Metrics(tiers, all)) first_metrics.push_back(m);
  }
  const std::string tier_name = o.one_pass ? "ncu one pass" : "ncu tier 1";
  progress(tier_name + " (" + std::to_string(first_metrics.size()) + " metrics)");
  ProfileTarget capped = target;
  capped.max_launches = o.max_launches;
  NcuRun one = profiler.Ncu(capped, first_metrics);
  d->tier_seconds[tier_name] = one.seconds;
  if (!one.ok) throw Error("profiling failed: " + one.error);
  d->ncu_tier1 = one.csv;

  // Tier 0, static: the build's object and whatever a hybrid loaded.
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& so : one.loaded_so) {
    BuildResult b;
    b.ok = true;
    b.so_path = so;
    objects.push_back(b);
  }
  for (const auto& b : objects) {
    StaticReport sr = StaticProfile(b);
    d->sass_text += sr.sass_text;
    d->resources.insert(d->resources.end(), b.resources.begin(), b.resources.end());
    for (const auto& n : sr.notes) d->notes.push_back(n);
  }
  if (objects.empty())
    d->notes.push_back(
        "no compiled object of kopt's to disassemble (the candidate's kernels come from torch or "
        "load_inline)");
  d->tier_seconds["static"] = Since(t0);

  // Timeline: for hybrids, and wherever one call launches several kernels.
  double launches = static_cast<double>(one.report.kernels.size()) / std::max(1, target.calls);
  bool capped_out = o.max_launches > 0 && launches >= o.max_launches;
  if (capped_out && o.timeline == "off")
    d->notes.push_back(
        fmt::format("ncu stopped after {} launches per call; without the timeline the call's "
                    "figures count only those",
                    o.max_launches));
  if (o.timeline == "on" || (o.timeline == "auto" && (o.hybrid || launches > 1))) {
    progress("timeline");
    ProfileTarget tt = target;
    tt.calls = std::max(target.calls, o.timeline_calls);
    TimelineRun tl = profiler.Timeline(tt);
    d->tier_seconds["timeline"] = tl.seconds;
    if (tl.ok) {
      d->timeline = tl.timeline;
      // A hybrid's host time per call without kopt's timing harness around it.
      if (o.hybrid) d->context.host_ms = tl.timeline.value("host_ms", d->context.host_ms);
    } else {
      d->notes.push_back("timeline: " + tl.error);
    }
  }

  // The champion's source-level counters: the kernel taking the most time.
  if (o.source && !one.report.kernels.empty()) {
    std::map<std::string, double> time_by_name;
    for (const auto& k : one.report.kernels)
      time_by_name[k.name] += MetricOr(k.metrics, metric::kDuration);
    auto top = std::max_element(time_by_name.begin(), time_by_name.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
    std::string base = top->first.substr(0, top->first.find_first_of("(<"));
    if (base.rfind("void ", 0) == 0) base = base.substr(5);
    std::string regex;
    for (char c : base) {
      if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) regex += '\\';
      regex += c;
    }
    progress("ncu source counters of " + base);
    NcuRun src = profiler.Source(target, "^" + regex);
    d->tier_seconds["ncu source"] = src.seconds;
    if (src.ok)
      d->ncu_source = src.csv;
    else
      d->notes.push_back("source counters: " + src.error);
  }

  // Tier 2: the sets of the classes tier 1 found.
  if (o.tier >= 2 && !o.one_pass) {
    DiagnosisReport first = DiagnoseProfileData(*d, data_dir);
    std::vector<std::string> more = Tier2Metrics(tiers, ClassesOf(first));
    if (!more.empty()) {
      progress("ncu tier 2 (" + std::to_string(more.size()) + " metrics for " +
               BoundClassName(first.call.bound) + ")");
      NcuRun two = profiler.Ncu(capped, more);
      d->tier_seconds["ncu tier 2"] = two.seconds;
      if (two.ok)
        d->ncu_tier2 = two.csv;
      else
        d->notes.push_back("ncu tier 2: " + two.error);
    }
  }
}

}  // namespace kopt
