// Which roof a kernel (or a whole call) sits under, and how far it is from the floor.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/json.h"
#include "profile/metrics.h"
#include "task/device.h"

namespace kopt {

enum class BoundClass {
  kMemoryDram,      ///< DRAM bandwidth is the roof
  kMemoryL2,        ///< L2 bandwidth
  kMemoryL1Shared,  ///< L1/shared-memory bandwidth
  kComputeFp32,     ///< the FP32 (FMA) pipe
  kComputeTensor,   ///< the tensor cores
  kLatency,         ///< nothing near its roof: latency is not hidden
  kLaunchHost,      ///< the GPU idles between kernels (launches, host work)
  kSmallGrid,       ///< too few blocks to fill the GPU
};

/// "memory.dram", "memory.l2", "memory.l1_shared", "compute.fp32",
/// "compute.tensor", "latency", "launch_host", "small_grid".
std::string BoundClassName(BoundClass c);
bool IsMemoryBound(BoundClass c);

/// Everything the classifier looks at. Missing numbers are 0 / nullopt; the
/// classifier then falls back to what it has (SOL percentages first, then
/// achieved rates against the ceilings).
struct RooflineInput {
  Ceilings ceilings;
  int sm_count = 0;
  double l2_bytes = 0;    ///< of the device's L2, what this work may keep out of DRAM; 0: unknown
  double time_ms = 0;     ///< measured per call (CUDA events)
  double kernel_ms = 0;   ///< sum of kernel durations per call (ncu or events); 0: unknown
  double dram_bytes = 0;  ///< moved per call; 0: unknown
  double min_bytes = 0;   ///< the floor's bytes (TaskBundle::min_bytes); 0: use dram_bytes
  double latency_ms = 0;  ///< the call's dependent steps at a barrier each (whole calls only)
  std::map<std::string, double> flops;  ///< by precision: fp32, tf32, bf16, fp16
  Metrics metrics;                      ///< ncu SOL percentages, waves, grid size (merged launches)
};

struct RooflineThresholds {
  double max_gpu_busy_fraction = 0.6;
  double small_grid_max_waves = 0.5;
  double min_sol_pct = 60;
  /// DRAM % at least this share of L2 %: the L2 traffic is DRAM's passing
  /// through, so DRAM (not L2) is the memory roof.
  double dram_share_of_l2 = 0.7;
};

/// Reads data/diagnose/roofline.json; throws kopt::Error naming the file when
/// it is unreadable or a key is missing.
RooflineThresholds LoadRooflineThresholds(const std::filesystem::path& path);

struct RooflineResult {
  BoundClass bound = BoundClass::kLatency;
  double floor_ms = 0;      ///< bytes at bandwidth vs FLOPs at rate, the larger
  std::string floor_bound;  ///< "memory", "compute" or "latency" (which term set the floor)
  double headroom = 0;      ///< time_ms / floor_ms (1 = at the floor); 0 when unknown
  std::map<std::string, double> utilization;  ///< unit -> percent of its peak
  std::string explanation;                    ///< one plain-English sentence
  /// The DRAM utilization came from the bytes the work must move through
  /// DRAM (min_bytes beyond what L2 can hold), not from ncu's counter, which
  /// misses writes L2 holds past the kernel's end.
  bool dram_from_min_bytes = false;
};

RooflineResult ClassifyRoofline(const RooflineInput& input, const RooflineThresholds& t);

Json ToJson(const RooflineResult& r);

}  // namespace kopt
