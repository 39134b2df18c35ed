// Reading Nsight Compute CSV output (`ncu --csv --page raw`) into Metrics.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "profile/metrics.h"

namespace kopt {

/// One profiled kernel launch.
struct NcuKernel {
  int id = -1;              ///< ncu's launch ID
  std::string name;         ///< "Kernel Name" as ncu printed it
  std::string block_size;   ///< e.g. "(256, 1, 1)"
  std::string grid_size;
  std::string device;
  std::string cc;           ///< compute capability, e.g. "9.0"
  Metrics metrics;          ///< numeric metrics, in base units (see NcuScale)
  std::map<std::string, std::string> units;  ///< metric -> unit as printed
  std::map<std::string, std::string> text;   ///< non-numeric metric values
};

/// The parse: failures are values (`error` set, kernels empty).
struct NcuReport {
  std::vector<NcuKernel> kernels;        ///< in launch order
  std::vector<std::string> warnings;     ///< ==WARNING==/==ERROR== lines, odd rows
  std::string error;                     ///< non-empty when no table was found
  bool ok() const { return error.empty(); }
};

/// Parses ncu's CSV. Both layouts are accepted:
///  - `--page raw` (wide): a header row (ID, Process ID, ..., Kernel Name, ...,
///    then one column per metric), a units row (empty under the fixed columns),
///    then one row per kernel launch;
///  - `--page details` (long): one row per (launch, metric) with "Metric Name",
///    "Metric Unit" and "Metric Value" columns.
/// Lines ncu or the program print around the table (==PROF==, program output)
/// are skipped. Values may be quoted and carry thousands separators ("1,024");
/// "n/a" and empty cells leave the metric absent.
NcuReport ParseNcuCsv(const std::string& text);

/// The factor that turns a value in `unit` into kopt's base unit
/// (nanoseconds, bytes, hertz, bytes/second); 1 for unknown or unitless.
double NcuScale(const std::string& unit);

/// Splits one CSV record (double-quoted fields, "" escapes a quote).
std::vector<std::string> SplitCsvRecord(const std::string& line);

/// "1,234.5" -> 1234.5; nullopt for "n/a", "", or text.
std::optional<double> ParseNcuNumber(const std::string& cell);

/// The metrics of every launch whose name contains `name_part`, summed for
/// counters and duration-weighted for averages and percentages (one kernel
/// launched many times becomes one profile).
Metrics MergeLaunches(const NcuReport& report, const std::string& name_part = "");

}  // namespace kopt
