#include "diagnose/analysis_tool.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"

namespace kopt {

namespace fs = std::filesystem;

double Thresholds::Get(const std::string& tool, const std::string& key) const {
  if (!data_.contains(tool) || !data_[tool].contains(key) || !data_[tool][key].is_number()) {
    throw Error(fmt::format("{} lacks the number {}.{}: add it (docs/analysis-tools.md).", origin_,
                            tool, key));
  }
  return data_[tool][key].get<double>();
}

std::string Thresholds::Severity(double gain) const {
  if (gain >= Get("severity", "critical_gain")) return "critical";
  if (gain >= Get("severity", "warning_gain")) return "warning";
  return "info";
}

Thresholds LoadThresholds(const fs::path& path) {
  return Thresholds(ReadJsonFile(path), path.string());
}

fs::path DiagnoseDataDir() {
  auto has = [](const fs::path& root) {
    return fs::exists(root / "data" / "diagnose" / "thresholds.json");
  };
  if (const char* env = std::getenv("KOPT_ROOT"); env && has(env))
    return fs::path(env) / "data" / "diagnose";
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path p = exe.parent_path(); !ec && !p.empty() && p != p.root_path();
       p = p.parent_path()) {
    if (has(p)) return p / "data" / "diagnose";
  }
  for (fs::path p = fs::current_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    if (has(p)) return p / "data" / "diagnose";
  }
  throw Error(
      "cannot find data/diagnose/thresholds.json: run kopt from its repository or set KOPT_ROOT.");
}

void ToolRegistry::Register(const std::string& name, Factory factory) {
  if (!factories_.emplace(name, std::move(factory)).second) {
    throw Error("two analysis tools are named '" + name + "': rename one.");
  }
}

std::vector<std::string> ToolRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, f] : factories_) names.push_back(name);
  return names;
}

std::unique_ptr<AnalysisTool> ToolRegistry::Make(const std::string& name) const {
  auto it = factories_.find(name);
  return it == factories_.end() ? nullptr : it->second();
}

std::vector<std::unique_ptr<AnalysisTool>> ToolRegistry::MakeAll() const {
  std::vector<std::unique_ptr<AnalysisTool>> tools;
  for (const auto& [name, f] : factories_) tools.push_back(f());
  return tools;
}

std::vector<Diagnosis> RunTools(const ToolRegistry& registry, const AnalysisInput& in) {
  std::vector<Diagnosis> out;
  for (const auto& tool : registry.MakeAll()) {
    if (!tool->AppliesTo(in.roofline.bound)) continue;
    if (auto d = tool->Run(in)) out.push_back(std::move(*d));
  }
  std::stable_sort(out.begin(), out.end(), [](const Diagnosis& a, const Diagnosis& b) {
    return a.estimated_gain > b.estimated_gain;
  });
  return out;
}

Diagnosis Finish(const AnalysisTool& tool, const AnalysisInput& in, Diagnosis d) {
  d.tool = tool.name();
  d.estimated_gain = std::clamp(d.estimated_gain, 0.0, 1.0);
  d.severity = in.thresholds->Severity(d.estimated_gain);
  return d;
}

}  // namespace kopt
