// The suite table of `kopt bench`: one row per task and solution.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace kopt {

struct BenchRow {
  std::string task;
  std::string solution;  ///< file name, or "" for a task with none
  std::string kind;      ///< cuda, hybrid
  std::optional<double> eager_ms;
  std::optional<double> compile_ms;
  std::optional<double> floor_ms;
  std::optional<double> time_ms;           ///< the solution's median
  std::optional<double> speedup_vs_eager;  ///< interleaved in one session
  std::optional<double> speedup_vs_compile;
  std::optional<double> floor_fraction;    ///< floor / time: 1.0 is at the roof
  std::optional<double> energy_mj;
  std::optional<double> source_to_verdict_s;
  std::string verdict;  ///< measured, incorrect, crashed, ... or "no solution", "task error"
  std::string reason;   ///< first reason for anything but measured
  std::vector<std::string> flags;
};

Json ToJson(const BenchRow& row);
/// The inverse of ToJson (a saved `kopt bench --json` result); lenient, so
/// rows of partial or older results read back with what they hold.
BenchRow BenchRowFromJson(const Json& j);
/// The terminal table, plus a line per failure reason below it.
std::string RenderBenchTable(const std::vector<BenchRow>& rows);

}  // namespace kopt
