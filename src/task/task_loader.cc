#include "task/task_loader.h"

#include <algorithm>
#include <regex>

#include "core/error.h"
#include "core/json.h"

namespace kopt {
namespace fs = std::filesystem;
namespace {

bool HasDef(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

}  // namespace

bool LooksLikeTask(const fs::path& path) {
  if (path.extension() != ".py" || !fs::is_regular_file(path)) return false;
  std::string text;
  try {
    text = ReadTextFile(path);
  } catch (const Error&) {
    return false;
  }
  return HasDef(text, R"(^class\s+Model\s*\()") && HasDef(text, R"(^def\s+get_inputs\s*\()") &&
         HasDef(text, R"(^def\s+get_init_inputs\s*\()");
}

Task LoadTask(const fs::path& path) {
  if (!fs::exists(path)) throw Error("task file " + path.string() + " does not exist: check the path.");
  if (fs::is_directory(path)) {
    if (fs::exists(path / "task.toml"))
      throw Error(path.string() + " is a native CUDA task directory, which this version of kopt cannot read yet: "
                  "use a KernelBench-format .py task.");
    throw Error(path.string() + " is a directory: give one task file, or use `kopt bench` for a folder of tasks.");
  }
  if (!LooksLikeTask(path))
    throw Error(path.string() + " is not a KernelBench task: it needs `class Model(nn.Module)`, "
                "`def get_inputs()` and `def get_init_inputs()` at top level.");
  Task t;
  t.path = fs::absolute(path).lexically_normal();
  t.name = path.stem().string();
  t.format = TaskFormat::kKernelBench;
  return t;
}

Candidate LoadCandidate(const fs::path& path) {
  if (!fs::is_regular_file(path))
    throw Error("candidate file " + path.string() + " does not exist: check the path.");
  Candidate c;
  c.path = fs::absolute(path).lexically_normal();
  c.name = path.filename().string();
  c.source = ReadTextFile(path);
  auto ext = path.extension();
  if (ext == ".cu" || ext == ".cuh" || ext == ".cpp" || ext == ".cc") {
    c.kind = CandidateKind::kCuda;
    if (c.source.find("kopt_forward") == std::string::npos)
      throw Error(path.string() + " defines no kopt_forward: a cuda candidate must implement the ABI in "
                  "include/kopt/abi.h.");
  } else if (ext == ".py") {
    c.kind = CandidateKind::kHybrid;
    if (!HasDef(c.source, R"(^class\s+ModelNew\s*\()"))
      throw Error(path.string() + " defines no `class ModelNew`: a Python candidate must be a KernelBench "
                  "ModelNew file.");
  } else {
    throw Error(path.string() + " is neither a .cu candidate nor a .py ModelNew file.");
  }
  return c;
}

std::vector<Task> FindTasks(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw Error(dir.string() + " is not a directory of tasks: check the path.");
  std::vector<Task> tasks;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const auto& p = it->path();
    if (it->is_directory() && (p.filename() == "solutions" || p.filename() == "__pycache__")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && LooksLikeTask(p)) {
      Task t = LoadTask(p);
      // In a suite the name carries the sub-folder (level1/01_relu), so equal
      // stems in different levels stay apart.
      t.name = fs::relative(p, dir).replace_extension().generic_string();
      tasks.push_back(std::move(t));
    }
  }
  std::sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.path < b.path; });
  return tasks;
}

std::vector<Candidate> FindSolutions(const Task& task) {
  std::vector<Candidate> out;
  fs::path dir = task.path.parent_path() / "solutions";
  if (!fs::is_directory(dir)) return out;
  std::string stem = task.path.stem().string();
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string name = e.path().stem().string();
    auto ext = e.path().extension();
    if (ext != ".cu" && ext != ".py") continue;
    bool match = name == stem || (name.size() > stem.size() && name.compare(0, stem.size(), stem) == 0 &&
                                  (name[stem.size()] == '.' || name[stem.size()] == '_' || name[stem.size()] == '-'));
    if (!match) continue;
    try {
      out.push_back(LoadCandidate(e.path()));
    } catch (const Error&) {
      // Not a candidate (helper file); skipped.
    }
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.path < b.path; });
  return out;
}

}  // namespace kopt
