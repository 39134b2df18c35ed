#include "diagnose/roofline.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace kopt {
namespace {

double RequireNumber(const Json& j, const char* section, const char* key,
                     const std::filesystem::path& path) {
  if (!j.contains(section) || !j[section].contains(key) || !j[section][key].is_number()) {
    throw Error(fmt::format("{} lacks the number {}.{}: restore it from git.", path.string(),
                            section, key));
  }
  return j[section][key].get<double>();
}

double RateFor(const std::string& precision, const Ceilings& c) {
  if (precision == "fp32") return c.fp32_flops_per_s;
  if (precision == "tf32") return c.tf32_flops_per_s;
  if (precision == "bf16") return c.bf16_flops_per_s;
  if (precision == "fp16") return c.fp16_flops_per_s;
  return 0;
}

}  // namespace

std::string BoundClassName(BoundClass c) {
  switch (c) {
    case BoundClass::kMemoryDram:
      return "memory.dram";
    case BoundClass::kMemoryL2:
      return "memory.l2";
    case BoundClass::kMemoryL1Shared:
      return "memory.l1_shared";
    case BoundClass::kComputeFp32:
      return "compute.fp32";
    case BoundClass::kComputeTensor:
      return "compute.tensor";
    case BoundClass::kLatency:
      return "latency";
    case BoundClass::kLaunchHost:
      return "launch_host";
    case BoundClass::kSmallGrid:
      return "small_grid";
  }
  return "latency";
}

bool IsMemoryBound(BoundClass c) {
  return c == BoundClass::kMemoryDram || c == BoundClass::kMemoryL2 ||
         c == BoundClass::kMemoryL1Shared;
}

RooflineThresholds LoadRooflineThresholds(const std::filesystem::path& path) {
  Json j = ReadJsonFile(path);
  RooflineThresholds t;
  t.max_gpu_busy_fraction = RequireNumber(j, "launch_host", "max_gpu_busy_fraction", path);
  t.small_grid_max_waves = RequireNumber(j, "small_grid", "max_waves", path);
  t.min_sol_pct = RequireNumber(j, "bound", "min_sol_pct", path);
  t.dram_share_of_l2 = RequireNumber(j, "bound", "dram_share_of_l2", path);
  return t;
}

RooflineResult ClassifyRoofline(const RooflineInput& in, const RooflineThresholds& t) {
  RooflineResult r;
  const Metrics& m = in.metrics;
  const double time_s = in.time_ms / 1e3;

  // The floor: the larger of the bytes at bandwidth and the FLOPs at their rates.
  double bytes = in.min_bytes > 0 ? in.min_bytes : in.dram_bytes;
  double memory_ms =
      in.ceilings.bandwidth_bytes_per_s > 0 ? bytes / in.ceilings.bandwidth_bytes_per_s * 1e3 : 0;
  double compute_ms = 0;
  for (const auto& [precision, flops] : in.flops) {
    double rate = RateFor(precision, in.ceilings);
    if (rate > 0) compute_ms += flops / rate * 1e3;
  }
  r.floor_ms = std::max(memory_ms, compute_ms);
  r.floor_bound = compute_ms > memory_ms ? "compute" : "memory";
  if (in.latency_ms > r.floor_ms) {  // a chain of dependent steps, a barrier each
    r.floor_ms = in.latency_ms;
    r.floor_bound = "latency";
  }
  if (r.floor_ms > 0 && in.time_ms > 0) r.headroom = in.time_ms / r.floor_ms;

  // Utilization of each unit: ncu's SOL percentages, else achieved rates.
  auto put = [&](const char* unit, std::optional<double> v) {
    if (v) r.utilization[unit] = *v;
  };
  put("dram", GetMetric(m, metric::kDramThroughputPct));
  put("l2", GetMetric(m, metric::kL2ThroughputPct));
  put("l1_shared", GetMetric(m, metric::kL1ThroughputPct));
  put("fp32", GetMetric(m, metric::kFmaPipePct));
  put("tensor", GetMetric(m, metric::kTensorPipePct));
  if (!r.utilization.count("dram") && in.dram_bytes > 0 && time_s > 0 &&
      in.ceilings.bandwidth_bytes_per_s > 0) {
    r.utilization["dram"] = 100 * in.dram_bytes / time_s / in.ceilings.bandwidth_bytes_per_s;
  }
  // ncu charges DRAM write-back to whichever kernel evicts the lines (or to
  // none: it flushes L2 between the kernels it profiles), so a kernel whose
  // output fits in L2 shows its writes missing. Work larger than L2 must move
  // at least min_bytes less the L2 size through DRAM while its kernels run:
  // that lower bound, at the measured bandwidth, replaces a smaller counter.
  const double busy_s = (in.kernel_ms > 0 ? in.kernel_ms : in.time_ms) / 1e3;
  if (in.min_bytes > in.l2_bytes && in.l2_bytes > 0 && busy_s > 0 &&
      in.ceilings.bandwidth_bytes_per_s > 0) {
    double must_cross =
        100 * (in.min_bytes - in.l2_bytes) / busy_s / in.ceilings.bandwidth_bytes_per_s;
    auto it = r.utilization.find("dram");
    if (it != r.utilization.end() && must_cross > it->second) {
      it->second = must_cross;
      r.dram_from_min_bytes = true;
    }
  }
  if (time_s > 0) {
    auto achieved = [&](const char* precision) {
      auto it = in.flops.find(precision);
      double rate = RateFor(precision, in.ceilings);
      return it != in.flops.end() && rate > 0 ? 100 * it->second / time_s / rate : 0.0;
    };
    if (!r.utilization.count("fp32") && in.flops.count("fp32"))
      r.utilization["fp32"] = achieved("fp32");
    // The HMMA-pipe counter does not see every tensor path (Hopper's
    // warpgroup MMA among them): the achieved rate against the measured
    // ceiling counts too, whichever is higher.
    double tensor = achieved("tf32") + achieved("bf16") + achieved("fp16");
    if (tensor > 0) r.utilization["tensor"] = std::max(r.utilization["tensor"], tensor);
  }

  // 1. The GPU idles: launch- or host-bound.
  if (in.kernel_ms > 0 && in.time_ms > 0 && in.kernel_ms / in.time_ms < t.max_gpu_busy_fraction) {
    r.bound = BoundClass::kLaunchHost;
    r.explanation = fmt::format(
        "kernels run {:.0f}% of the measured {:.3f} ms; the rest is launch gaps and host work",
        100 * in.kernel_ms / in.time_ms, in.time_ms);
    return r;
  }
  // 2. Too few blocks to fill the GPU.
  std::optional<double> waves = GetMetric(m, metric::kWaves);
  if (!waves && in.sm_count > 0) {
    if (auto grid = GetMetric(m, metric::kGridSize)) waves = *grid / in.sm_count;
  }
  // (ncu prints waves to two decimals: a one-block launch reads 0.00.)
  if (waves && *waves < t.small_grid_max_waves) {
    r.bound = BoundClass::kSmallGrid;
    r.explanation = fmt::format("{:.2f} waves: the grid leaves most SMs idle", *waves);
    return r;
  }
  // 3. The busiest unit at or above its threshold is the roof.
  const std::pair<const char*, BoundClass> kUnits[] = {{"dram", BoundClass::kMemoryDram},
                                                       {"l2", BoundClass::kMemoryL2},
                                                       {"l1_shared", BoundClass::kMemoryL1Shared},
                                                       {"fp32", BoundClass::kComputeFp32},
                                                       {"tensor", BoundClass::kComputeTensor}};
  // DRAM traffic passes through L2, and on the H200 a streaming kernel shows
  // L2 throughput above DRAM throughput (a float4 copy: DRAM 75%, L2 90%).
  // L2 is the roof only when it carries much more than DRAM feeds it
  // (reuse, or partial-sector writes); otherwise the DRAM figure decides.
  bool dram_feeds_l2 = false;
  if (auto d = r.utilization.find("dram"), l2 = r.utilization.find("l2");
      d != r.utilization.end() && l2 != r.utilization.end()) {
    dram_feeds_l2 = d->second >= t.dram_share_of_l2 * l2->second;
  }
  const char* best = nullptr;
  double best_pct = -1;
  for (const auto& [unit, cls] : kUnits) {
    if (dram_feeds_l2 && std::string(unit) == "l2") continue;
    auto it = r.utilization.find(unit);
    if (it != r.utilization.end() && it->second > best_pct) {
      best_pct = it->second;
      best = unit;
      r.bound = cls;
    }
  }
  if (best && best_pct >= t.min_sol_pct) {
    r.explanation = fmt::format("{} runs at {:.0f}% of its peak", best, best_pct);
    if (r.dram_from_min_bytes && std::string(best) == "dram") {
      r.explanation +=
          " (counting the bytes the work must move through DRAM: ncu's counter misses "
          "writes L2 held past the kernels' ends)";
    }
    return r;
  }
  r.bound = BoundClass::kLatency;
  r.explanation = best ? fmt::format(
                             "the busiest unit ({}) is at {:.0f}% of its peak: latency is "
                             "not hidden",
                             best, best_pct)
                       : "no throughput figures: assuming latency-bound";
  return r;
}

Json ToJson(const RooflineResult& r) {
  return Json{{"bound", BoundClassName(r.bound)},
              {"floor_ms", r.floor_ms},
              {"floor_bound", r.floor_bound},
              {"headroom", r.headroom},
              {"utilization", r.utilization},
              {"explanation", r.explanation},
              {"dram_from_min_bytes", r.dram_from_min_bytes}};
}

}  // namespace kopt
