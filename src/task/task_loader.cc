#include "task/task_loader.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/json.h"
#include "core/subprocess.h"

namespace kopt {
namespace fs = std::filesystem;
namespace {

bool HasDef(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

// What Python's own parser says about a file: a syntax error (line and
// message), or the names its module body binds (classes, functions,
// assignments, imports), each as "class NAME" or "name NAME".
struct PythonParse {
  bool ran = false;
  int error_line = 0;
  std::string error;  ///< non-empty: the file does not parse
  std::set<std::string> bound;
};

constexpr const char* kParseScript = R"PY(
import ast, sys
path = sys.argv[1]
try:
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), path)
except SyntaxError as e:
    print("error", e.lineno or 0, e.msg, sep="\t")
    sys.exit(0)
except Exception as e:
    print("error", 0, f"{type(e).__name__}: {e}", sep="\t")
    sys.exit(0)
for node in tree.body:
    if isinstance(node, ast.ClassDef):
        print("class", node.name, sep="\t")
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        print("name", node.name, sep="\t")
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
            if isinstance(t, ast.Name):
                print("name", t.id, sep="\t")
    elif isinstance(node, ast.ImportFrom):
        for a in node.names:
            print("name", a.asname or a.name, sep="\t")
)PY";

PythonParse ParseWithPython(const fs::path& path, const std::string& python) {
  PythonParse p;
  ProcessOptions o;
  o.timeout_s = 30;
  ProcessResult r = RunProcess({python, "-c", kParseScript, path.string()}, o);
  if (!r.ok()) return p;  // no usable interpreter: the worker's start says why
  p.ran = true;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string kind = line.substr(0, tab), rest = line.substr(tab + 1);
    if (kind == "error") {
      auto tab2 = rest.find('\t');
      p.error_line = std::atoi(rest.substr(0, tab2).c_str());
      p.error = tab2 == std::string::npos ? rest : rest.substr(tab2 + 1);
    } else {
      p.bound.insert(kind + " " + rest);
    }
  }
  return p;
}

}  // namespace

std::string BlankCommentsAndStrings(const std::string& s) {
  std::string out = s;
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < out.size(); ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  size_t i = 0, n = s.size();
  while (i < n) {
    if (s.compare(i, 2, "//") == 0) {
      size_t end = s.find('\n', i);
      // A backslash before the newline continues the comment.
      while (end != std::string::npos && end > 0 && s[end - 1] == '\\') end = s.find('\n', end + 1);
      if (end == std::string::npos) end = n;
      blank(i, end);
      i = end;
    } else if (s.compare(i, 2, "/*") == 0) {
      size_t end = s.find("*/", i + 2);
      end = end == std::string::npos ? n : end + 2;
      blank(i, end);
      i = end;
    } else if (s[i] == 'R' && i + 1 < n && s[i + 1] == '"' &&
               (i == 0 ||
                !(std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '_'))) {
      size_t open = s.find('(', i + 2);
      if (open == std::string::npos) break;
      std::string close = ")" + s.substr(i + 2, open - i - 2) + "\"";
      size_t end = s.find(close, open);
      end = end == std::string::npos ? n : end + close.size();
      blank(i, end);
      i = end;
    } else if (s[i] == '"' || s[i] == '\'') {
      char q = s[i];
      size_t j = i + 1;
      while (j < n && s[j] != q && s[j] != '\n') j += s[j] == '\\' ? 2 : 1;
      size_t end = std::min(n, j + 1);
      blank(i, end);
      i = end;
    } else {
      ++i;
    }
  }
  return out;
}

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

Task LoadTask(const fs::path& path, const std::string& python) {
  if (!fs::exists(path)) throw Error("task file " + path.string() + " does not exist: check the path.");
  if (fs::is_directory(path)) {
    if (fs::exists(path / "task.toml"))
      throw Error(path.string() + " is a native CUDA task directory, which this version of kopt cannot read yet: "
                  "use a KernelBench-format .py task.");
    throw Error(path.string() + " is a directory: give one task file, or use `kopt bench` for a folder of tasks.");
  }
  PythonParse parsed;
  if (!python.empty() && path.extension() == ".py") parsed = ParseWithPython(path, python);
  if (parsed.ran && !parsed.error.empty())
    throw Error(fmt::format(
        "{}:{}: the task file has a Python syntax error ({}): fix it (python3 -m py_compile {} "
        "shows it).",
        path.string(), parsed.error_line, parsed.error, path.string()));
  if (parsed.ran) {
    std::vector<std::string> missing;
    if (!parsed.bound.count("class Model")) missing.push_back("`class Model(nn.Module)`");
    if (!parsed.bound.count("name get_inputs")) missing.push_back("`def get_inputs()`");
    if (!parsed.bound.count("name get_init_inputs")) missing.push_back("`def get_init_inputs()`");
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i)
      list += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
    if (!missing.empty())
      throw Error(path.string() + " is not a KernelBench task: it has no top-level " + list + ".");
  } else if (!LooksLikeTask(path)) {
    throw Error(path.string() + " is not a KernelBench task: it needs `class Model(nn.Module)`, "
                "`def get_inputs()` and `def get_init_inputs()` at top level.");
  }
  Task t;
  t.path = fs::absolute(path).lexically_normal();
  t.name = path.stem().string();
  t.format = TaskFormat::kKernelBench;
  return t;
}

Candidate LoadCandidate(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw Error("candidate " + path.string() +
                " is a directory: pass a candidate file, a .cu implementing include/kopt/abi.h or "
                "a ModelNew .py (kopt bench runs a folder of tasks and their solutions).");
  if (!fs::exists(path, ec))
    throw Error("candidate file " + path.string() + " does not exist: check the path.");
  if (!fs::is_regular_file(path, ec))
    throw Error("candidate " + path.string() +
                " is not a regular file: pass a .cu or a ModelNew .py file.");
  Candidate c;
  c.path = fs::absolute(path).lexically_normal();
  c.name = path.filename().string();
  c.source = ReadTextFile(path);
  auto ext = path.extension();
  if (ext == ".cu" || ext == ".cuh" || ext == ".cpp" || ext == ".cc") {
    c.kind = CandidateKind::kCuda;
    // Code only: a comment or a string naming kopt_forward is not an entry
    // point. The built object's export is checked after the build.
    static const std::regex kForward(R"(\bkopt_forward\b)");
    if (!std::regex_search(BlankCommentsAndStrings(c.source), kForward))
      throw Error(path.string() +
                  " defines no kopt_forward (outside comments and strings): a cuda candidate "
                  "must implement the ABI in include/kopt/abi.h.");
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
