#include "run/capture.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kopt {
namespace {

void AddFlag(TaskBundle* b, const std::string& flag, const std::string& note) {
  if (!b->HasFlag(flag)) {
    b->flags.push_back(flag);
    b->flag_notes.push_back(note);
  }
}

}  // namespace

TaskBundle BundleFromCapture(const Task& task, const std::string& task_hash,
                             const CaptureReply& capture, const DeviceInfo& device,
                             const Ceilings& ceilings, const DegeneracyThresholds& th) {
  TaskBundle b;
  b.task_name = task.name;
  b.task_path = task.path.string();
  b.task_hash = task_hash;
  b.device = device;

  b.inputs = capture.inputs;
  b.outputs = capture.outputs;
  b.n_forward_inputs = capture.n_forward_inputs;
  b.training = capture.training;

  b.graph = capture.graph;
  b.uncounted_ops = capture.uncounted_ops;
  b.flops = capture.flops;
  b.matrix_flops = capture.matrix_flops;
  b.conv_flops = capture.conv_flops;
  b.min_bytes = capture.min_bytes;
  b.kernels = capture.kernels;
  b.ref_error = capture.ref_error;

  // Extra input distributions: where the reference is defined, and whether
  // its outputs vary there (a kernel writing a constant fails there).
  for (const auto& [name, d] : capture.distributions) {
    DistributionFacts f;
    f.about = d.about;
    f.finite = d.finite;
    f.changes_inputs = d.changes_inputs;
    f.error = d.error;
    for (const auto& s : d.outputs_stats) {
      double scale = std::max(std::fabs(s.mean), s.max_abs);
      if (s.max_abs < th.near_zero_max_abs || scale <= 0 ||
          s.std / scale < th.near_constant_rel_std)
        f.varies = false;
    }
    b.distributions[name] = f;
  }
  std::string rescue;
  for (const auto& [name, f] : b.distributions)
    if (f.finite && f.changes_inputs && f.varies) rescue += (rescue.empty() ? "" : ", ") + name;
  if (!rescue.empty())
    rescue = " on the task's own inputs; candidates are also checked on " + rescue +
             " inputs, where it varies";

  // Degeneracy: judged per output over all seeds.
  const auto& stats = capture.outputs_stats;
  for (size_t o = 0; o < b.outputs.size(); ++o) {
    bool all_zero = !stats.empty();
    bool all_constant = !stats.empty();
    for (const auto& per_seed : stats) {
      if (o >= per_seed.size()) continue;
      const OutputStats& s = per_seed[o];
      double numel = s.numel.value_or(1);
      if (s.max_abs >= th.near_zero_max_abs) all_zero = false;
      double scale = std::max(std::fabs(s.mean), s.max_abs);
      if (numel <= 1 || scale <= 0 || s.std / scale >= th.near_constant_rel_std)
        all_constant = false;
    }
    if (all_zero)
      AddFlag(&b, flags::kNearZero,
              rescue.empty()
                  ? fmt::format("output {} is near zero for every seed (max |x| < {:g}): a kernel "
                                "writing zeros would pass",
                                o, th.near_zero_max_abs)
                  : fmt::format("output {} is near zero for every seed (max |x| < {:g}){}", o,
                                th.near_zero_max_abs, rescue));
    else if (all_constant)
      AddFlag(&b, flags::kNearConstant,
              rescue.empty()
                  ? fmt::format("output {} is near constant for every seed: a kernel writing one "
                                "value would pass",
                                o)
                  : fmt::format("output {} is near constant for every seed{}", o, rescue));
    if (o < capture.seed_rel_diff.size() && capture.seed_rel_diff[o] && b.outputs[o].Numel() > 0 &&
        *capture.seed_rel_diff[o] < th.seed_independent_rel_diff && !all_zero)
      AddFlag(&b, flags::kSeedIndependent,
              fmt::format("output {} does not change with the inputs: a kernel returning a stored "
                          "answer would pass",
                          o));
    if (o < capture.repeat_rel_diff.size() && capture.repeat_rel_diff[o] &&
        *capture.repeat_rel_diff[o] > th.stochastic_rel_diff)
      AddFlag(&b, flags::kStochastic,
              fmt::format(
                  "output {} changes between runs on identical inputs (random ops such as dropout)",
                  o));
  }
  if (b.ref_error.is_null() ||
      (b.ref_error.is_array() && !b.ref_error.empty() && b.ref_error[0].is_null()))
    AddFlag(&b, flags::kNoFp64,
            "the reference cannot run in float64, so tolerances fall back to comparing with the "
            "fp32 reference");

  std::string dtype = ComputeDtype(b);
  b.latency_stages = LatencyStages(b.graph);
  // A floor only means something against a GPU's measured ceilings.
  if (device.available) {
    b.floor_ms = FloorMs(b.min_bytes, b.matrix_flops, b.conv_flops,
                         std::max(0.0, b.flops - b.matrix_flops), dtype, ceilings, &b.floor_bound);
    // A chain of dependent steps (GEMMs in a row, a recurrence's time steps)
    // cannot beat a barrier per step, however little each moves.
    if (b.latency_stages * kStageLatencyMs > b.floor_ms) {
      b.floor_ms = b.latency_stages * kStageLatencyMs;
      b.floor_bound = "latency";
    }
    double io_bytes = 0;
    for (const auto& t : b.inputs)
      if (t.role == "input") io_bytes += t.Numel() * DtypeBytes(t.dtype);
    for (const auto& t : b.outputs) io_bytes += t.Numel() * DtypeBytes(t.dtype);
    if (ceilings.bandwidth_bytes_per_s > 0)
      b.hard_floor_ms = 1e3 * io_bytes / ceilings.bandwidth_bytes_per_s;
  }
  return b;
}

Ceilings CeilingsFromProbes(const CeilingsReply& reply, const DeviceInfo& device) {
  Ceilings c;
  c.probes = ToJson(reply);
  for (const auto& p : reply.bandwidth)
    if (p.bytes_per_s) c.bandwidth_bytes_per_s = std::max(c.bandwidth_bytes_per_s, *p.bytes_per_s);
  for (const auto& p : reply.matmul) {
    if (!p.flops_per_s) continue;
    double f = *p.flops_per_s;
    const std::string& probe = p.probe;
    const std::string& dtype = p.dtype;
    if (probe.find("tf32") != std::string::npos)
      c.tf32_flops_per_s = std::max(c.tf32_flops_per_s, f);
    else if (dtype == "bfloat16" || probe.find("bf16") != std::string::npos)
      c.bf16_flops_per_s = std::max(c.bf16_flops_per_s, f);
    else if (dtype == "float16" || probe.find("fp16") != std::string::npos)
      c.fp16_flops_per_s = std::max(c.fp16_flops_per_s, f);
    else
      c.fp32_flops_per_s = std::max(c.fp32_flops_per_s, f);
  }
  if (auto nominal = NominalRatesPerSmClock(device.cc_major, device.cc_minor);
      nominal && device.sm_count > 0 && device.max_sm_clock_mhz > 0) {
    double per_clock = device.sm_count * device.max_sm_clock_mhz * 1e6;
    c.fp32_flops_per_s = std::max(c.fp32_flops_per_s, nominal->fp32 * per_clock);
    c.tf32_flops_per_s = std::max(c.tf32_flops_per_s, nominal->tf32 * per_clock);
    c.bf16_flops_per_s = std::max(c.bf16_flops_per_s, nominal->bf16 * per_clock);
    c.fp16_flops_per_s = std::max(c.fp16_flops_per_s, nominal->fp16 * per_clock);
  }
  return c;
}

}  // namespace kopt
