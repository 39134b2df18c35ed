#include "diagnose/diagnose.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

namespace kopt {
namespace {

std::string BaseName(const std::string& name) {
  std::string s = name.substr(0, name.find('('));
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  return s;
}

// A call far from its floor always gets a finding: when no tool explains
// the gap, what the main kernel's counters say (occupancy, the busiest unit,
// the dominant stall) and the remedy that fits.
std::optional<Diagnosis> FarFromFloor(const DiagnosisReport& r,
                                      const std::map<std::string, Metrics>& metrics_of,
                                      double calls, double call_ms, const Thresholds& t) {
  const char* kTool = "far_from_floor";
  if (r.call.floor_ms <= 0 || r.call.headroom < t.Get(kTool, "min_headroom") || r.kernels.empty())
    return std::nullopt;
  // Explained when the findings together could close enough of the gap, or
  // one of them is worth a warning on its own.
  const double gap = 1 - 1 / r.call.headroom;
  double found = 0, largest = 0;
  auto add = [&](const Diagnosis& d) {
    found += d.CallGain();
    largest = std::max(largest, d.CallGain());
  };
  for (const auto& d : r.call_diagnoses) add(d);
  for (const auto& k : r.kernels)
    for (const auto& d : k.diagnoses) add(d);
  if (found >= t.Get(kTool, "explained_share_of_gap") * gap ||
      largest >= t.Get("severity", "warning_gain"))
    return std::nullopt;
  const KernelFindings& main = r.kernels.front();  // the most time
  auto it = metrics_of.find(main.kernel);
  const Metrics empty;
  const Metrics& m = it == metrics_of.end() ? empty : it->second;
  Diagnosis d;
  d.tool = kTool;
  d.kernel = "(call)";
  d.estimated_gain = t.Get(kTool, "gap_fraction") * (1 - 1 / r.call.headroom);
  d.call_gain = d.estimated_gain;
  d.severity = t.Severity(d.estimated_gain);
  double share = call_ms > 0 ? std::min(1.0, main.mean_ms * main.launches / calls / call_ms) : 1.0;
  d.evidence["headroom"] = r.call.headroom;
  d.evidence["floor_ms"] = r.call.floor_ms;
  d.evidence["main_kernel_share"] = share;
  std::string name = main.kernel.substr(0, main.kernel.find('('));
  std::string advice = fmt::format(
      "The call takes {:.1f}x its floor and the analysis tools' findings explain little of it; its "
      "main kernel {} "
      "takes {:.0f}% of the call.",
      r.call.headroom, name, 100 * share);
  // The busiest unit and the occupancy.
  std::string busiest;
  double busiest_pct = -1;
  for (const auto& [unit, pct] : main.roofline.utilization)
    if (pct > busiest_pct) busiest = unit, busiest_pct = pct;
  // A unit near its peak is a roof the roof tools speak about (the floor
  // then counts less work than any kernel does), not an unexplained gap.
  if (busiest_pct >= 100 * t.Get(kTool, "busy_unit")) return std::nullopt;
  if (busiest_pct >= 0) {
    d.evidence["busiest_unit_pct"] = busiest_pct;
    advice +=
        fmt::format(" Its busiest unit, {}, runs at {:.0f}% of its peak", busiest, busiest_pct);
  }
  if (auto occ = GetMetric(m, metric::kAchievedOccupancyPct)) {
    d.evidence[metric::kAchievedOccupancyPct] = *occ;
    advice += fmt::format("{} warps fill {:.0f}% of the slots", busiest_pct >= 0 ? ", and" : " Its",
                          *occ);
  }
  if (busiest_pct >= 0 || GetMetric(m, metric::kAchievedOccupancyPct)) advice += ".";
  // The dominant stall, where tier 2 collected them.
  std::string top;
  double top_cycles = 0;
  for (const auto& reason : StallReasons()) {
    double c = MetricOr(m, std::string(metric::kStallPrefix) + reason + metric::kStallSuffix);
    if (c > top_cycles) top = reason, top_cycles = c;
  }
  if (!top.empty()) {
    d.evidence[std::string(metric::kStallPrefix) + top + metric::kStallSuffix] = top_cycles;
    advice += fmt::format(" Warps mostly wait on {} ({:.1f} cycles per issued instruction).", top,
                          top_cycles);
  }
  advice +=
      " With no unit near its peak it is latency-bound: keep more memory operations in flight per "
      "thread (wider "
      "loads, several independent loads before their first use), raise occupancy (fewer registers "
      "or shared "
      "memory per block), and launch enough blocks to fill every SM several times.";
  d.suggested_moves = {"increase_memory_level_parallelism", "raise_occupancy", "more_blocks"};
  d.advice = advice;
  return d;
}

// A call of several kernels that moves more bytes through DRAM than the task
// needs: intermediates round-trip DRAM between kernels. Names the kernels
// that move the most and the bytes a fused single pass would save.
std::optional<Diagnosis> ExcessTraffic(const DiagnosisReport& r,
                                       const std::map<std::string, Metrics>& metrics_of,
                                       double calls, double call_ms, double min_bytes,
                                       double dram_bytes, double kernel_ms,
                                       double bandwidth_bytes_per_s, const Thresholds& t) {
  const char* kTool = "excess_traffic";
  if (r.kernels.size() < 2 || min_bytes <= 0 || dram_bytes <= 0 || call_ms <= 0)
    return std::nullopt;
  const double over = dram_bytes / min_bytes;
  if (over < t.Get(kTool, "min_over_min_bytes")) return std::nullopt;
  double memory_share = 0;
  struct Mover {
    std::string name;
    double bytes;
  };
  std::vector<Mover> movers;
  for (const auto& k : r.kernels) {
    if (IsMemoryBound(k.roofline.bound)) memory_share += k.mean_ms * k.launches / calls / call_ms;
    auto it = metrics_of.find(k.kernel);
    double b =
        it == metrics_of.end() ? 0 : MetricOr(it->second, metric::kDramBytes) * k.launches / calls;
    movers.push_back({k.kernel.substr(0, k.kernel.find('(')), b});
  }
  memory_share = std::min(memory_share, 1.0);
  std::stable_sort(movers.begin(), movers.end(),
                   [](const Mover& a, const Mover& b) { return a.bytes > b.bytes; });
  Diagnosis d;
  d.tool = kTool;
  d.kernel = "(call)";
  // What the excess bytes cost: at least their time at the measured DRAM
  // bandwidth (kernels that wait on memory latency rather than at the roof
  // are not classified memory-bound, yet their bytes still take that long),
  // and never more than the kernels' time.
  double at_bandwidth = bandwidth_bytes_per_s > 0
                            ? (dram_bytes - min_bytes) / bandwidth_bytes_per_s * 1e3 / call_ms
                            : 0;
  at_bandwidth = std::min(at_bandwidth, kernel_ms / call_ms);
  d.estimated_gain =
      std::min(t.Get(kTool, "max_gain"), std::max(memory_share * (1 - 1 / over), at_bandwidth));
  d.call_gain = d.estimated_gain;
  d.severity = t.Severity(d.estimated_gain);
  d.evidence["dram_bytes_per_call"] = dram_bytes;
  d.evidence["min_bytes"] = min_bytes;
  d.evidence["dram_over_min_bytes"] = over;
  d.evidence["memory_bound_share"] = memory_share;
  std::string most;
  for (size_t i = 0; i < movers.size() && i < 3; ++i) {
    if (movers[i].bytes <= 0) break;
    most +=
        fmt::format("{}{} ({:.0f} MB)", i == 0 ? "" : ", ", movers[i].name, movers[i].bytes / 1e6);
  }
  d.advice = fmt::format(
      "The call moves {:.1f}x the bytes the task needs through DRAM ({:.0f} MB against {:.0f} MB "
      "per call) over "
      "its {} kernels{}{}. What one kernel writes and the next reads round-trips DRAM: fuse them "
      "into one pass "
      "that keeps the intermediates in registers or shared memory, saving about {:.0f} MB per "
      "call.",
      over, dram_bytes / 1e6, min_bytes / 1e6, r.kernels.size(),
      most.empty() ? "" : "; the most in ", most, (dram_bytes - min_bytes) / 1e6);
  d.suggested_moves = {"fuse_passes", "keep_intermediates_on_chip", "single_pass_algorithm"};
  // Library kernels around the elementwise ones say which fusion: an
  // epilogue on the matrix kernel, and channels-last instead of converting.
  auto lower = [](std::string x) {
    for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return x;
  };
  std::string matrix;
  int conversions = 0, elementwise = 0;
  for (const auto& k : r.kernels) {
    std::string n = lower(k.kernel.substr(0, k.kernel.find('(')));
    if (n.find("nchwtonhwc") != std::string::npos || n.find("nhwctonchw") != std::string::npos) {
      conversions += k.launches;
    } else if (n.find("elementwise") != std::string::npos) {
      elementwise += k.launches;
    } else if (matrix.empty() &&
               (n.find("gemm") != std::string::npos || n.find("conv") != std::string::npos ||
                n.find("xmma") != std::string::npos || n.find("cutlass") != std::string::npos)) {
      matrix = BaseName(k.kernel);
    }
  }
  if (!matrix.empty() && elementwise > 0) {
    d.advice += fmt::format(
        " The {} elementwise launch(es) around {} belong in its epilogue (bias, activation, scale "
        "applied in registers before the store: a cuBLASLt or CUTLASS epilogue, cuDNN's fused "
        "convolution-bias-activation).",
        elementwise, matrix);
    d.suggested_moves.push_back("epilogue_fusion");
  }
  if (conversions > 0) {
    d.advice += fmt::format(
        " {} launch(es) convert between NCHW and NHWC: run the convolution channels-last end to "
        "end (inputs and weights in torch.channels_last) so the conversions disappear.",
        conversions);
    d.suggested_moves.push_back("channels_last");
  }
  return d;
}

}  // namespace

bool SameKernel(const std::string& ncu_name, const StaticKernel& k) {
  if (ncu_name == k.kernel || ncu_name == k.demangled) return true;
  std::string base = BaseName(ncu_name);
  return !base.empty() && (base == BaseName(k.demangled) || base == k.kernel);
}

DiagnosisReport DiagnoseProfile(const NcuReport& ncu, const StaticReport& static_report,
                                const ProfileContext& ctx, const ToolRegistry& registry,
                                const Thresholds& thresholds, const RooflineThresholds& roofline) {
  DiagnosisReport report;
  if (!ncu.ok()) report.notes.push_back("no ncu profile: " + ncu.error);
  report.notes.insert(report.notes.end(), static_report.notes.begin(), static_report.notes.end());
  const double calls = std::max(1, ctx.calls_profiled);

  // Group launches by kernel name, in first-launch order.
  std::vector<std::string> names;
  std::map<std::string, std::vector<const NcuKernel*>> launches;
  for (const auto& k : ncu.kernels) {
    if (!launches.count(k.name)) names.push_back(k.name);
    launches[k.name].push_back(&k);
  }

  std::map<std::string, Metrics> metrics_of;  // each kernel's merged launches
  double kernel_ms_per_call = 0, dram_bytes_per_call = 0;
  int launches_per_call = 0;
  for (const auto& name : names) {
    KernelFindings f;
    f.kernel = name;
    f.launches = static_cast<int>(launches[name].size());
    double total_ns = 0;
    for (const NcuKernel* k : launches[name]) total_ns += MetricOr(k->metrics, metric::kDuration);
    Metrics merged;
    for (const NcuKernel* k : launches[name]) {
      double w =
          total_ns > 0 ? MetricOr(k->metrics, metric::kDuration) / total_ns : 1.0 / f.launches;
      AccumulateMetrics(&merged, k->metrics, w);
    }
    f.mean_ms = total_ns / 1e6 / f.launches;
    kernel_ms_per_call += total_ns / 1e6 / calls;
    dram_bytes_per_call += MetricOr(merged, metric::kDramBytes) / calls;
    launches_per_call += f.launches;

    // One kernel does all the call's work: each of its launches does an equal
    // share of the call's bytes and FLOPs (one share when it launches once;
    // the timeline counts launches ncu did not profile).
    const bool sole = names.size() == 1;
    const double share = 1.0 / std::max({1.0, f.launches / calls, ctx.launches});
    RooflineInput rin;
    rin.ceilings = ctx.ceilings;
    rin.sm_count = ctx.device.sm_count;
    // L2 can keep at most its size out of DRAM over the whole call, so each
    // of the sole kernel's launches gets its share of that allowance too.
    rin.l2_bytes = static_cast<double>(ctx.device.l2_bytes) * (sole ? share : 1.0);
    rin.time_ms = f.mean_ms;
    rin.dram_bytes = MetricOr(merged, metric::kDramBytes) / f.launches;
    rin.metrics = merged;
    if (sole) {
      for (const auto& [precision, flops] : ctx.flops_by_precision)
        rin.flops[precision] = flops * share;
      rin.min_bytes = ctx.min_bytes * share;
    }
    f.roofline = ClassifyRoofline(rin, roofline);

    metrics_of[name] = merged;
    AnalysisInput in;
    in.kernel = name;
    in.metrics = std::move(merged);
    in.device = ctx.device;
    in.roofline = f.roofline;
    in.thresholds = &thresholds;
    in.contract_precision = ctx.contract_precision;
    in.matrix_precision = ctx.matrix_precision;
    if (sole) {
      in.min_bytes = ctx.min_bytes * share;
      in.flops = ctx.flops * share;
      in.matrix_flops = ctx.matrix_flops * share;
    }
    for (const auto& sk : static_report.kernels) {
      if (!SameKernel(name, sk)) continue;
      if (sk.sass) in.sass = sk.sass;
      if (sk.resources) in.resources = sk.resources;
      break;
    }
    f.diagnoses = RunTools(registry, in);
    report.kernels.push_back(std::move(f));
  }
  launches_per_call = static_cast<int>(launches_per_call / calls);
  std::stable_sort(report.kernels.begin(), report.kernels.end(),
                   [](const KernelFindings& a, const KernelFindings& b) {
                     return a.mean_ms * a.launches > b.mean_ms * b.launches;
                   });

  // ncu may have seen only the call's first launches (ProfileTarget::
  // max_launches); the timeline counted them all. The unseen launches are
  // taken to move bytes at the rate of the seen ones.
  if (ctx.launches > launches_per_call && ctx.kernel_ms > 0) {
    if (kernel_ms_per_call > 0)
      dram_bytes_per_call *= std::max(1.0, ctx.kernel_ms / kernel_ms_per_call);
    report.notes.push_back(
        fmt::format("ncu profiled {} of the call's {:.0f} kernel launches; the call's figures "
                    "count all of them (timeline)",
                    launches_per_call, ctx.launches));
    launches_per_call = static_cast<int>(std::lround(ctx.launches));
    kernel_ms_per_call = std::max(kernel_ms_per_call, ctx.kernel_ms);
  }

  RooflineInput call;
  call.ceilings = ctx.ceilings;
  call.sm_count = ctx.device.sm_count;
  call.l2_bytes = static_cast<double>(ctx.device.l2_bytes);
  call.time_ms = ctx.time_ms > 0 ? ctx.time_ms : kernel_ms_per_call;
  call.kernel_ms = kernel_ms_per_call;
  call.dram_bytes = dram_bytes_per_call;
  call.min_bytes = ctx.min_bytes;
  call.latency_ms = ctx.latency_ms;
  call.flops = ctx.flops_by_precision;
  if (report.kernels.size() == 1) call.metrics = MergeLaunches(ncu);
  report.call = ClassifyRoofline(call, roofline);

  // Call-level tools see the call's figures only, so kernel tools stay quiet.
  AnalysisInput in;
  in.kernel = "(call)";
  in.device = ctx.device;
  in.roofline = report.call;
  in.thresholds = &thresholds;
  in.time_ms = call.time_ms;
  in.host_ms = ctx.host_ms;
  in.kernel_ms = kernel_ms_per_call;
  in.kernel_launches = launches_per_call;
  in.gap_ms = ctx.gap_ms;
  in.copies = ctx.copies;
  in.syncs = ctx.syncs;
  report.call_diagnoses = RunTools(registry, in);

  // What each finding could save of the whole call: a kernel's gain times its
  // share of the call's time. Severity follows that, so a large gain on a
  // kernel that takes 0.2% of the call is not critical.
  for (auto& d : report.call_diagnoses) {
    d.kernel = "(call)";
    d.call_gain = std::clamp(d.estimated_gain, 0.0, 1.0);
  }
  const double call_ms = std::max(call.time_ms, kernel_ms_per_call);
  for (auto& k : report.kernels) {
    double share =
        call_ms > 0 ? std::clamp(k.mean_ms * k.launches / calls / call_ms, 0.0, 1.0) : 1.0;
    for (auto& d : k.diagnoses) {
      d.kernel = k.kernel;
      d.call_gain = std::clamp(d.estimated_gain, 0.0, 1.0) * share;
      d.severity = thresholds.Severity(*d.call_gain);
    }
    SortByCallGain(&k.diagnoses);
  }
  if (auto d = ExcessTraffic(report, metrics_of, calls, call_ms, ctx.min_bytes, dram_bytes_per_call,
                             kernel_ms_per_call, ctx.ceilings.bandwidth_bytes_per_s, thresholds))
    report.call_diagnoses.push_back(*d);
  if (auto d = FarFromFloor(report, metrics_of, calls, call_ms, thresholds))
    report.call_diagnoses.push_back(*d);
  return report;
}

std::vector<Diagnosis> RankedDiagnoses(const DiagnosisReport& report) {
  std::vector<Diagnosis> all = report.call_diagnoses;
  for (const auto& k : report.kernels)
    all.insert(all.end(), k.diagnoses.begin(), k.diagnoses.end());
  SortByCallGain(&all);
  return all;
}

Json ToJson(const DiagnosisReport& report) {
  Json kernels = Json::array();
  for (const auto& k : report.kernels) {
    Json ds = Json::array();
    for (const auto& d : k.diagnoses) ds.push_back(ToJson(d));
    kernels.push_back(Json{{"kernel", k.kernel},
                           {"launches", k.launches},
                           {"mean_ms", k.mean_ms},
                           {"roofline", ToJson(k.roofline)},
                           {"diagnoses", ds}});
  }
  Json call = Json::array();
  for (const auto& d : report.call_diagnoses) call.push_back(ToJson(d));
  return Json{{"call", ToJson(report.call)},
              {"call_diagnoses", call},
              {"kernels", kernels},
              {"notes", report.notes}};
}

}  // namespace kopt
