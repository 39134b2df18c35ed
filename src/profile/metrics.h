// Reading Metrics (core/metrics.h): the Nsight Compute names kopt's tools
// read, in base units, and lookups that tolerate ncu's renames.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/metrics.h"

namespace kopt {

/// The value when present.
std::optional<double> GetMetric(const Metrics& m, const std::string& name);
/// The value, or `fallback` when absent.
double MetricOr(const Metrics& m, const std::string& name, double fallback = 0);
/// The first of `names` that is present (ncu renames metrics across versions).
std::optional<double> FirstMetric(const Metrics& m, const std::vector<std::string>& names);
/// numerator / denominator when both are present and the denominator is > 0.
std::optional<double> MetricRatio(const Metrics& m, const std::string& numerator,
                                  const std::string& denominator);
/// Sum over every metric whose name starts with `prefix` (and ends with
/// `suffix`); nullopt when none matches.
std::optional<double> SumMetrics(const Metrics& m, const std::string& prefix,
                                 const std::string& suffix = "");

/// Adds `from` into `into`: counters (.sum) add; other metrics (averages,
/// percentages, ratios, launch attributes) are weighted by `weight` and summed,
/// so callers averaging over launches pass duration fractions as weights.
void AccumulateMetrics(Metrics* into, const Metrics& from, double weight);

/// Names kopt's tools read; the ncu command in tests/data/ncu/README.md
/// collects exactly these (KoptNcuMetrics()).
namespace metric {
inline constexpr const char* kDuration = "gpu__time_duration.sum";
inline constexpr const char* kSmThroughputPct = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kMemThroughputPct =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kDramBytes = "dram__bytes.sum";
inline constexpr const char* kDramBytesRead = "dram__bytes_read.sum";
inline constexpr const char* kDramBytesWrite = "dram__bytes_write.sum";
inline constexpr const char* kDramThroughputPct =
    "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kL2ThroughputPct = "lts__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kL2HitRatePct = "lts__t_sector_hit_rate.pct";
inline constexpr const char* kL2Bytes = "lts__t_bytes.sum";
inline constexpr const char* kL1ThroughputPct =
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kL1HitRatePct = "l1tex__t_sector_hit_rate.pct";
inline constexpr const char* kGlobalLdSectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
inline constexpr const char* kGlobalLdRequests = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
inline constexpr const char* kGlobalStSectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
inline constexpr const char* kGlobalStRequests = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
inline constexpr const char* kLocalLdSectors = "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum";
inline constexpr const char* kLocalStSectors = "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum";
inline constexpr const char* kSharedLdConflicts =
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
inline constexpr const char* kSharedStConflicts =
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
inline constexpr const char* kSharedLdWavefronts =
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
inline constexpr const char* kSharedStWavefronts =
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
inline constexpr const char* kAchievedOccupancyPct =
    "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kTheoreticalOccupancyPct = "sm__maximum_warps_per_active_cycle_pct";
inline constexpr const char* kOccLimitRegisters = "launch__occupancy_limit_registers";
inline constexpr const char* kOccLimitSharedMem = "launch__occupancy_limit_shared_mem";
inline constexpr const char* kOccLimitWarps = "launch__occupancy_limit_warps";
inline constexpr const char* kOccLimitBlocks = "launch__occupancy_limit_blocks";
inline constexpr const char* kRegistersPerThread = "launch__registers_per_thread";
inline constexpr const char* kGridSize = "launch__grid_size";
inline constexpr const char* kBlockSize = "launch__block_size";
inline constexpr const char* kWaves = "launch__waves_per_multiprocessor";
inline constexpr const char* kTensorHmmaInst = "sm__inst_executed_pipe_tensor_op_hmma.sum";
inline constexpr const char* kTensorGmmaInst = "sm__inst_executed_pipe_tensor_op_gmma.sum";
inline constexpr const char* kTensorPipePct =
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kFmaPipePct =
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kXuPipePct =
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active";
inline constexpr const char* kFfmaThreadInst = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum";
inline constexpr const char* kFaddThreadInst = "sm__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr const char* kFmulThreadInst = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr const char* kThreadsPerInst = "smsp__thread_inst_executed_per_inst_executed.ratio";
inline constexpr const char* kBranchUniformPct =
    "smsp__sass_average_branch_targets_threads_uniform.pct";
/// Stall reasons: prefix + reason + suffix (cycles per issued instruction),
/// or the PC-sampling family kPcSampStallPrefix + reason (sample counts).
inline constexpr const char* kStallPrefix = "smsp__average_warps_issue_stalled_";
inline constexpr const char* kStallSuffix = "_per_issue_active.ratio";
inline constexpr const char* kPcSampStallPrefix = "smsp__pcsamp_warps_issue_stalled_";
}  // namespace metric

/// The metric list kopt asks ncu for (joined with commas for --metrics).
const std::vector<std::string>& KoptNcuMetrics();

/// The stall reasons kopt knows, e.g. "long_scoreboard".
const std::vector<std::string>& StallReasons();

}  // namespace kopt
