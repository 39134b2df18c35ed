#include "profile/ncu_csv.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

namespace kopt {
namespace {

// Columns ncu prints before the metrics on the raw page; they are attributes
// of the launch, not metrics.
const std::set<std::string>& FixedColumns() {
  static const std::set<std::string> kFixed = {
      "ID",        "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
      "Stream",    "Block Size", "Grid Size",    "Device",    "CC",          "Section Name",
      "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type",
      "Rule Description", "Estimated Speedup Type", "Estimated Speedup", "Kernel Time"};
  return kFixed;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

int IndexOf(const std::vector<std::string>& header, const std::string& name) {
  auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::string Cell(const std::vector<std::string>& row, int index) {
  return index >= 0 && index < static_cast<int>(row.size()) ? row[index] : "";
}

bool IsTableLine(const std::string& line) {
  return !line.empty() && line[0] == '"';
}

void SetMetric(NcuKernel* k, const std::string& name, const std::string& unit,
               const std::string& value) {
  if (name.empty()) return;
  if (!unit.empty()) k->units[name] = unit;
  if (auto v = ParseNcuNumber(value)) {
    k->metrics[name] = *v * NcuScale(unit);
  } else if (!value.empty() && value != "n/a") {
    k->text[name] = value;
  }
}

NcuKernel KernelFromRow(const std::vector<std::string>& header, const std::vector<std::string>& row) {
  NcuKernel k;
  k.id = std::atoi(Cell(row, IndexOf(header, "ID")).c_str());
  k.name = Cell(row, IndexOf(header, "Kernel Name"));
  k.block_size = Cell(row, IndexOf(header, "Block Size"));
  k.grid_size = Cell(row, IndexOf(header, "Grid Size"));
  k.device = Cell(row, IndexOf(header, "Device"));
  k.cc = Cell(row, IndexOf(header, "CC"));
  return k;
}

}  // namespace

std::vector<std::string> SplitCsvRecord(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
    } else if (c != '\r' && c != '\n') {
      field += c;
    }
  }
  fields.push_back(field);
  return fields;
}

std::optional<double> ParseNcuNumber(const std::string& cell) {
  std::string s;
  for (char c : Trim(cell)) {
    if (c != ',') s += c;
  }
  if (s.empty() || s == "n/a") return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') return std::nullopt;
  return v;
}

double NcuScale(const std::string& raw_unit) {
  const std::string unit = Trim(raw_unit);
  static const std::map<std::string, double> kScale = {
      {"second", 1e9},  {"msecond", 1e6},   {"usecond", 1e3},  {"nsecond", 1},
      {"byte", 1},      {"Kbyte", 1e3},     {"Mbyte", 1e6},    {"Gbyte", 1e9},
      {"Tbyte", 1e12},  {"KB", 1e3},        {"MB", 1e6},       {"GB", 1e9},
      {"hz", 1},        {"Khz", 1e3},       {"Mhz", 1e6},      {"Ghz", 1e9},
      {"byte/second", 1}, {"Kbyte/second", 1e3}, {"Mbyte/second", 1e6},
      {"Gbyte/second", 1e9}, {"Tbyte/second", 1e12},
      {"ns", 1},        {"us", 1e3},        {"ms", 1e6},       {"s", 1e9}};
  auto it = kScale.find(unit);
  return it == kScale.end() ? 1 : it->second;
}

NcuReport ParseNcuCsv(const std::string& text) {
  NcuReport report;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    std::string t = Trim(line);
    if (t.rfind("==", 0) == 0) {
      if (t.find("==WARNING==") == 0 || t.find("==ERROR==") == 0) report.warnings.push_back(t);
      continue;
    }
    if (!IsTableLine(t)) continue;
    auto fields = SplitCsvRecord(t);
    if (IndexOf(fields, "ID") >= 0 && IndexOf(fields, "Kernel Name") >= 0) {
      header = fields;
      break;
    }
  }
  if (header.empty()) {
    report.error = "no ncu CSV table (a header row with \"ID\" and \"Kernel Name\") in the output";
    return report;
  }

  const int id_col = IndexOf(header, "ID");
  const int metric_name_col = IndexOf(header, "Metric Name");
  const int metric_value_col = IndexOf(header, "Metric Value");
  const bool long_layout = metric_name_col >= 0 && metric_value_col >= 0;
  std::vector<std::string> units(header.size());
  std::map<int, size_t> by_id;  // long layout: launch ID -> kernels index

  while (std::getline(in, line)) {
    std::string t = Trim(line);
    if (t.rfind("==", 0) == 0) {
      if (t.find("==WARNING==") == 0 || t.find("==ERROR==") == 0) report.warnings.push_back(t);
      continue;
    }
    if (!IsTableLine(t)) continue;
    auto row = SplitCsvRecord(t);
    if (row.size() != header.size()) {
      report.warnings.push_back("skipped a row with " + std::to_string(row.size()) +
                                " fields (the header has " + std::to_string(header.size()) + ")");
      continue;
    }
    if (Trim(row[id_col]).empty()) {  // the units row of the raw page
      if (!long_layout) units = row;
      continue;
    }
    if (long_layout) {
      int id = std::atoi(row[id_col].c_str());
      auto [it, added] = by_id.emplace(id, report.kernels.size());
      if (added) report.kernels.push_back(KernelFromRow(header, row));
      SetMetric(&report.kernels[it->second], row[metric_name_col],
                Cell(row, IndexOf(header, "Metric Unit")), row[metric_value_col]);
      continue;
    }
    NcuKernel k = KernelFromRow(header, row);
    for (size_t c = 0; c < header.size(); ++c) {
      if (FixedColumns().count(header[c])) continue;
      SetMetric(&k, header[c], units[c], row[c]);
    }
    report.kernels.push_back(std::move(k));
  }
  if (report.kernels.empty()) report.warnings.push_back("the ncu table has no kernel rows");
  return report;
}

Metrics MergeLaunches(const NcuReport& report, const std::string& name_part) {
  std::vector<const NcuKernel*> chosen;
  double total_ns = 0;
  for (const auto& k : report.kernels) {
    if (!name_part.empty() && k.name.find(name_part) == std::string::npos) continue;
    chosen.push_back(&k);
    total_ns += MetricOr(k.metrics, metric::kDuration);
  }
  Metrics merged;
  for (const NcuKernel* k : chosen) {
    double weight = total_ns > 0 ? MetricOr(k->metrics, metric::kDuration) / total_ns
                                 : 1.0 / static_cast<double>(chosen.size());
    AccumulateMetrics(&merged, k->metrics, weight);
  }
  return merged;
}

}  // namespace kopt
