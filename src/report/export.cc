#include "report/export.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "report/export_templates.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

// What the embedded loader provides under kopt's names (export_runtime.py
// sets each of them on `_kopt_runtime`; a test imports them all).
const std::set<std::string>& KoptNames() {
  static const std::set<std::string> names = {
      "CompileError", "CandidateError", "LoadError", "CudaModule",    "KoptTensor", "load_cuda",
      "load_so",      "find_nvcc",      "cache_dir", "KOPT_MAX_DIMS", "dtype_code"};
  return names;
}

bool Has(const std::string& text, const char* pattern) {
  return std::regex_search(text, std::regex(pattern, std::regex::multiline));
}

bool IsUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    int more = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (more < 0 || i + more >= s.size()) return false;
    for (int k = 1; k <= more; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += more + 1;
  }
  return true;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::string::size_type start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) {
      if (start < text.size()) lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// A file stem that is safe in any file system and shell.
std::string SafeStem(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  while (!s.empty() && s.front() == '.') s.erase(s.begin());
  return s;
}

std::string PythonList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + PythonStringLiteral(items[i]);
  return out + "]";
}

// ---------------------------------------------------------------------------
// Python source scanning: which lines are code (not inside a triple-quoted
// string), so import rewriting never touches a docstring or a CUDA source.

// For each line, whether it starts outside any triple-quoted string.
std::vector<bool> CodeLines(const std::vector<std::string>& lines) {
  std::vector<bool> code(lines.size(), false);
  std::string open;  // the triple quote we are inside, or empty
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string& l = lines[n];
    code[n] = open.empty();
    for (size_t i = 0; i < l.size(); ++i) {
      if (!open.empty()) {
        if (l[i] == '\\') {
          ++i;
        } else if (l.compare(i, 3, open) == 0) {
          open.clear();
          i += 2;
        }
        continue;
      }
      if (l[i] == '#') break;
      if (l.compare(i, 3, "\"\"\"") == 0 || l.compare(i, 3, "'''") == 0) {
        open = l.substr(i, 3);
        i += 2;
      } else if (l[i] == '"' || l[i] == '\'') {  // a one-line string: skip it
        char q = l[i];
        for (++i; i < l.size() && l[i] != q; ++i)
          if (l[i] == '\\') ++i;
      }
    }
  }
  return code;
}

// Where a block may be inserted at the top of a module: after leading
// comments, the module docstring and `from __future__` imports.
size_t TopInsertionLine(const std::vector<std::string>& lines) {
  static const std::regex kDocOpen(R"(^[rRuU]?("""|'''))");
  size_t i = 0, after = 0;
  auto skip_blank = [&] {
    while (i < lines.size() && (Trim(lines[i]).empty() || Trim(lines[i])[0] == '#')) ++i;
  };
  skip_blank();
  std::smatch m;
  if (i < lines.size() && std::regex_search(lines[i], m, kDocOpen)) {
    std::string delim = m[1];
    size_t from = m.position(0) + m.length(0);
    if (lines[i].find(delim, from) == std::string::npos) {
      ++i;
      while (i < lines.size() && lines[i].find(delim) == std::string::npos) ++i;
    }
    after = i = std::min(i + 1, lines.size());
  }
  for (;;) {
    skip_blank();
    if (i >= lines.size() || lines[i].rfind("from __future__", 0) != 0) break;
    if (lines[i].find('(') != std::string::npos)
      while (i < lines.size() && lines[i].find(')') == std::string::npos) ++i;
    after = i = std::min(i + 1, lines.size());
  }
  return after;
}

// One imported name: `name` or `name as alias`.
struct ImportName {
  std::string name, alias;
};

std::vector<ImportName> ParseNames(const std::string& list, const std::string& where) {
  static const std::regex kItem(R"(^\s*([\w.*]+)(?:\s+as\s+(\w+))?\s*$)");
  std::vector<ImportName> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (Trim(item).empty()) continue;  // a trailing comma
    std::smatch m;
    if (!std::regex_match(item, m, kItem))
      throw Error(
          where +
          " imports kopt in a form kopt export cannot replace: write `import kopt` on a line "
          "of its own.");
    out.push_back({m[1], m[2].matched ? m[2].str() : ""});
  }
  return out;
}

struct Rewrite {
  std::string text;
  bool changed = false;
};

// Replaces a hybrid's imports of kopt with names bound to the embedded loader
// (`_kopt_runtime`), keeping every line where it was so tracebacks still
// point at the candidate's own line numbers.
Rewrite ReplaceKoptImports(const std::string& source, const std::string& label) {
  static const std::regex kImport(R"(^(\s*)import\s+([^#;]*?)\s*(;.*|#.*)?$)");
  static const std::regex kFrom(R"(^(\s*)from\s+([\w.]+)\s+import\s+(.*)$)");
  static const std::regex kStray(
      R"((^|[:;]\s*)(import\s[^#]*\bkopt\b|from\s+kopt\b)|__import__\(\s*['"]kopt|import_module\(\s*['"]kopt)");
  std::vector<std::string> lines = SplitLines(source);
  std::vector<bool> code = CodeLines(lines);
  Rewrite r;
  std::set<std::string> aliases;  // names bound to the whole module
  for (size_t n = 0; n < lines.size(); ++n) {
    if (!code[n]) continue;
    std::string where = fmt::format("{} line {}", label, n + 1);
    std::string line = lines[n];
    std::string cr = !line.empty() && line.back() == '\r' ? "\r" : "";
    if (!cr.empty()) line.pop_back();
    std::smatch m;
    if (std::regex_match(line, m, kImport)) {
      std::vector<ImportName> names = ParseNames(m[2], where);
      std::vector<std::string> kept, bound;
      for (const auto& i : names) {
        if (i.name == "kopt") {
          std::string alias = i.alias.empty() ? "kopt" : i.alias;
          bound.push_back(alias + " = _kopt_runtime");
          aliases.insert(alias);
        } else if (i.name.rfind("kopt.", 0) == 0) {
          throw Error(where + " imports " + i.name +
                      ", which an exported file cannot carry: use only kopt.load_cuda and its "
                      "loader names.");
        } else {
          kept.push_back(i.name + (i.alias.empty() ? "" : " as " + i.alias));
        }
      }
      if (bound.empty()) continue;
      std::string stmt;
      if (!kept.empty()) {
        stmt = "import ";
        for (size_t k = 0; k < kept.size(); ++k) stmt += (k ? ", " : "") + kept[k];
      }
      for (const auto& b : bound) stmt += (stmt.empty() ? "" : "; ") + b;
      std::string rest = m[3].matched ? m[3].str() : "";
      std::string note = "  # kopt export: was `" + Trim(line) + "`";
      if (rest.rfind(";", 0) == 0) note.clear();  // more statements follow on the line
      lines[n] = m[1].str() + stmt +
                 (rest.empty()              ? ""
                  : rest.rfind("#", 0) == 0 ? ""
                                            : rest) +
                 note + cr;
      r.changed = true;
      continue;
    }
    if (std::regex_match(line, m, kFrom)) {
      std::string module = m[2];
      if (module != "kopt") {
        if (module.rfind("kopt.", 0) == 0)
          throw Error(where + " imports from " + module +
                      ", which an exported file cannot carry: use only kopt.load_cuda and its "
                      "loader names.");
        continue;
      }
      std::string list = m[3];
      if (auto hash = list.find('#'); hash != std::string::npos) list.resize(hash);
      size_t last = n;
      if (Trim(list).rfind("(", 0) == 0) {
        while (list.find(')') == std::string::npos) {
          if (++last >= lines.size()) throw Error(where + " has an unclosed `from kopt import (`.");
          std::string more = lines[last];
          if (auto hash = more.find('#'); hash != std::string::npos) more.resize(hash);
          list += " " + more;
        }
        list = Trim(list);
        if (list.back() != ')')
          throw Error(
              where +
              " imports kopt in a form kopt export cannot replace: write `import kopt` on a "
              "line of its own.");
        list = list.substr(1, list.size() - 2);
      } else if (list.find(';') != std::string::npos || Trim(list).back() == '\\') {
        throw Error(
            where +
            " imports kopt in a form kopt export cannot replace: write `import kopt` on a line "
            "of its own.");
      }
      std::vector<ImportName> names = ParseNames(list, where);
      if (names.size() == 1 && names[0].name == "*") {
        names.clear();
        for (const auto& k : KoptNames()) names.push_back({k, ""});
      }
      std::string stmt;
      for (const auto& i : names) {
        if (!KoptNames().count(i.name))
          throw Error(where + " imports `" + i.name +
                      "` from kopt, which an exported file does not carry: use "
                      "kopt.load_cuda and its loader names only.");
        stmt += (stmt.empty() ? "" : "; ") + (i.alias.empty() ? i.name : i.alias) +
                " = _kopt_runtime." + i.name;
      }
      lines[n] = m[1].str() + stmt + "  # kopt export: was `from kopt import ...`" + cr;
      for (size_t k = n + 1; k <= last; ++k) lines[k] = "";
      n = last;
      r.changed = true;
      continue;
    }
  }
  // Anything else that still imports kopt would import the real one.
  for (size_t n = 0; n < lines.size(); ++n) {
    if (!code[n]) continue;
    std::string line = lines[n].substr(0, lines[n].find('#'));
    if (std::regex_search(line, std::regex(kStray)))
      throw Error(fmt::format(
          "{} line {} imports kopt in a form kopt export cannot replace: write `import kopt` "
          "on a line of its own.",
          label, n + 1));
    // Attributes of kopt the embedded loader lacks would fail only when used.
    for (const auto& alias : aliases) {
      std::regex attr("\\b" + alias + R"(\.(\w+))");
      for (auto it = std::sregex_iterator(line.begin(), line.end(), attr);
           it != std::sregex_iterator(); ++it) {
        std::string name = (*it)[1];
        if (!KoptNames().count(name))
          throw Error(
              fmt::format("{} line {} uses {}.{}, which an exported file does not carry: use "
                          "kopt.load_cuda and its loader names only.",
                          label, n + 1, alias, name));
      }
    }
  }
  r.text = JoinLines(lines);
  if (!source.empty() && source.back() != '\n') r.text.pop_back();
  return r;
}

// ---------------------------------------------------------------------------
// The generated text

std::string ValueText(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  return v.dump();
}

// "key: value" lines of the provenance object (keys sorted).
std::vector<std::string> ProvenanceLines(const Json& provenance) {
  std::vector<std::string> out;
  if (!provenance.is_object()) return out;
  for (const auto& [k, v] : provenance.items()) {
    std::string value = ValueText(v);
    if (k.find("speedup") != std::string::npos && v.is_number()) value += "x";
    std::replace(value.begin(), value.end(), '\n', ' ');
    out.push_back(k + ": " + value);
  }
  return out;
}

std::string DataBlock(const ExportRequest& r, const std::string& name) {
  return fmt::format(
      "_KOPT_NAME = {}\n"
      "_KOPT_ARCH = {}  # the architecture the recipe targets\n"
      "# nvcc flags: kopt's Builder recipe (the loader adds -I<folder of kopt/abi.h>\n"
      "# -o candidate.so candidate.cu)\n"
      "_KOPT_RECIPE = {}\n"
      "_KOPT_ABI_H = {}\n",
      PythonStringLiteral(name), PythonStringLiteral(r.arch), PythonList(r.recipe),
      PythonStringLiteral(r.abi_header));
}

std::string HeaderComment(const ExportRequest& r, const std::string& name,
                          const std::string& what) {
  std::string s = fmt::format("# {}_modelnew.py: {}, written by `kopt export`.\n", name, what);
  std::vector<std::string> prov = ProvenanceLines(r.provenance);
  if (prov.empty()) {
    s += "# kopt export did not verify it; see README.md.\n";
  } else {
    s += "# Verified by kopt:\n";
    for (const auto& l : prov) s += "#   " + l + "\n";
  }
  return s;
}

std::string CudaModelNew(const ExportRequest& r, const std::string& name,
                         const std::string& task_source) {
  std::string s = HeaderComment(r, name, "a KernelBench ModelNew running one CUDA kernel");
  s +=
      "# The task's own source comes first, unchanged; after it, the kernel, the nvcc recipe kopt\n"
      "# verified it with, and the code that compiles it at first use and calls it. kopt itself "
      "is\n"
      "# not needed: torch with CUDA and nvcc are.\n\n";
  s += task_source;
  if (!task_source.empty() && task_source.back() != '\n') s += "\n";
  s += "\n\n# " + std::string(75, '=') + "\n# Added by kopt export.\n\n";
  s += DataBlock(r, name);
  s += "_KOPT_CUDA_SOURCE = " + PythonStringLiteral(r.candidate.source) + "\n\n\n";
  s += export_templates::kRuntimePy;
  s += "\n\n";
  s += export_templates::kModelNewPy;
  return s;
}

std::string HybridModelNew(const ExportRequest& r, const std::string& name,
                           const Rewrite& rewrite) {
  if (!rewrite.changed)
    return r.candidate.source;  // nothing to carry: the file as kopt verified it
  std::vector<std::string> lines = SplitLines(rewrite.text);
  size_t at = TopInsertionLine(lines);
  std::string block =
      "\n" + HeaderComment(r, name, "this KernelBench ModelNew, made self-contained");
  block +=
      "# Its `import kopt` now binds the loader below (kopt's load_cuda with the nvcc recipe kopt\n"
      "# verified with), so kopt itself is not needed. The candidate follows after it, unchanged\n"
      "# but for those imports.\n";
  block += "\n" + DataBlock(r, name) + "\n\n";
  block += export_templates::kRuntimePy;
  block +=
      "\n# " + std::string(75, '=') + "\n# The candidate, unchanged but for its kopt imports.\n";
  std::string out;
  for (size_t i = 0; i < at; ++i) out += lines[i] + "\n";
  out += block;
  for (size_t i = at; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

std::string Readme(const ExportRequest& r, const std::string& name, const ExportedFiles& files,
                   const std::string& task_name) {
  const bool cuda = r.candidate.kind == CandidateKind::kCuda;
  std::string recipe;
  for (const auto& f : r.recipe) recipe += " " + f;
  std::string s = fmt::format("# {}: exported by kopt\n\n", name);
  s += fmt::format("Task `{}`{}, candidate `{}` ({}).\n\n", task_name,
                   r.task_path.empty() ? "" : " (" + r.task_path.string() + ")", r.candidate.name,
                   CandidateKindName(r.candidate.kind));
  s += "## How it was verified\n\n";
  std::vector<std::string> prov = ProvenanceLines(r.provenance);
  if (prov.empty()) {
    s += "Not by this export: `kopt export --task --candidate` writes files and does not run them. "
         "Run\n"
         "`kopt eval` on the task and candidate for a verdict and a timing.\n\n";
  } else {
    s += "kopt verified it against the task's PyTorch reference (several input seeds, poisoned "
         "outputs,\n"
         "inputs checked for mutation) and timed it against eager PyTorch:\n\n";
    for (const auto& l : prov) s += "- " + l + "\n";
    s += "\n";
  }
  s += "## Files\n\n";
  if (cuda) {
    s += fmt::format(
        "- `{}` — the kernel, implementing kopt's C ABI: `kopt_forward`{}.\n",
        files.cu.filename().string(),
        r.candidate.source.find("kopt_init") != std::string::npos ? " and `kopt_init`" : "");
    s += "- `kopt/abi.h` — the ABI header it includes.\n";
    s += fmt::format(
        "- `{}` — a KernelBench solution file: the task's own source (its imports and `Model`), "
        "then\n"
        "  `class ModelNew(Model)` with the same constructor and parameters, whose `forward` "
        "compiles the\n"
        "  kernel at first use (nvcc, the recipe below, cached by content hash under\n"
        "  `~/.cache/kopt-export`) and calls it on torch's current CUDA stream.\n",
        files.modelnew.filename().string());
  } else {
    s += fmt::format("- `{}` — the candidate's KernelBench `ModelNew` file{}.\n",
                     files.modelnew.filename().string(),
                     files.embedded_loader
                         ? ", with its `import kopt` bound to an embedded loader (the same "
                           "`load_cuda`, compiling "
                           "with the recipe below), so it runs without kopt installed"
                         : ", unchanged");
  }
  s += "- `README.md` — this file.\n\n";
  s += "## Use\n\n";
  s += fmt::format(
      "With KernelBench: give `{0}` as the custom model source; its harness loads it, builds\n"
      "`ModelNew(*get_init_inputs())` under the same seed as `Model`, and compares them.\n\n"
      "In your code: load the file as a module (`importlib`, or copy it into your package) and "
      "use\n"
      "`ModelNew` where you used `Model`. It needs PyTorch with CUDA{1}; it does not need "
      "kopt.\n\n",
      files.modelnew.filename().string(),
      cuda || files.embedded_loader ? " and nvcc (`$KOPT_NVCC`, `PATH`, `$CUDA_HOME/bin` or "
                                      "`/usr/local/cuda/bin`) at first use"
                                    : "");
  if (cuda || files.embedded_loader) {
    s += fmt::format(
        "The kernel is compiled for `{}`{}. On another GPU set `KOPT_EXPORT_ARCH=sm_XX`\n", r.arch,
        prov.empty() ? "" : ", the architecture kopt verified it on");
    s += "to compile it for that one (kopt did not verify that build). `KOPT_EXPORT_CACHE` moves\n"
         "the cache folder; deleting it is always safe.\n\n";
  }
  if (files.embedded_loader) {
    s += "`load_cuda` compiles each CUDA source with kopt's recipe:\n\n";
    s += fmt::format(
        "```\nnvcc{} -I<folder holding kopt/abi.h> -o candidate.so candidate.cu\n```\n", recipe);
  }
  if (cuda) {
    s += "From C or C++: build the shared object with the same recipe\n\n";
    s += fmt::format("```\nnvcc{} -I. -o {}.so {}\n```\n\n", recipe, name,
                     files.cu.filename().string());
    s += "and call `kopt_forward(in, n_in, out, n_out, stream)`: `in` holds the forward's tensor\n"
         "arguments (Python scalars as 0-d tensors: int64, float64, bool), then the model's "
         "parameters in\n"
         "`named_parameters()` order, then its buffers; `out` holds contiguous outputs of the "
         "reference's\n"
         "shapes and dtypes, which the kernel must fill. Call `kopt_init`, when exported, once "
         "before.\n";
    if (!r.inputs.empty()) {
      s += "\n| # | role | name | dtype | shape |\n|---|---|---|---|---|\n";
      auto row = [&](size_t i, const TensorSpec& t) {
        std::string shape;
        for (size_t k = 0; k < t.shape.size(); ++k)
          shape += (k ? ", " : "") + std::to_string(t.shape[k]);
        s += fmt::format("| {} | {} | {} | {} | ({}) |\n", i, t.role, t.name, t.dtype, shape);
      };
      for (size_t i = 0; i < r.inputs.size(); ++i) row(i, r.inputs[i]);
      for (size_t i = 0; i < r.outputs.size(); ++i) row(i, r.outputs[i]);
    }
  }
  return s;
}

}  // namespace

std::string PythonStringLiteral(const std::string& text) {
  if (text.find_first_of("'\\\n\r") == std::string::npos && text.find('\0') == std::string::npos)
    return "'" + text + "'";
  auto raw_fits = [&](const std::string& quote) {
    return text.find(quote) == std::string::npos && text.find('\r') == std::string::npos &&
           text.find('\0') == std::string::npos &&
           (text.empty() || (text.back() != '\\' && text.back() != quote[0]));
  };
  for (const char* quote : {"'''", "\"\"\""})
    if (raw_fits(quote)) return std::string("r") + quote + text + quote;
  std::string out = "'''";
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\0':
        out += "\\x00";
        break;
      default:
        out += c;
    }
  }
  return out + "'''";
}

std::vector<std::string> ExportRecipe(const BuilderOptions& options, const Candidate& candidate,
                                      const std::vector<std::string>& extra_flags) {
  BuilderOptions without_include = options;
  without_include.include_dir.clear();
  return NvccFlags(without_include, BuildRequest{candidate.source, candidate.name, extra_flags});
}

ExportedFiles ExportCandidate(const ExportRequest& r) {
  const Candidate& c = r.candidate;
  std::string task_source =
      r.task_source.empty() && !r.task_path.empty() ? ReadTextFile(r.task_path) : r.task_source;
  std::string task_label = r.task_path.empty() ? "the task" : r.task_path.string();
  std::string cand_label = c.name.empty() ? "the candidate" : c.name;
  if (!Has(task_source, R"(^class\s+Model\s*[(:])"))
    throw Error(task_label + " is not a KernelBench task: it defines no top-level `class Model`.");
  if (!IsUtf8(task_source))
    throw Error(task_label + " is not UTF-8 text, so it cannot be embedded in a Python file.");
  if (!IsUtf8(c.source)) throw Error(cand_label + " is not UTF-8 text, so it cannot be exported.");
  if (c.kind == CandidateKind::kCuda && c.source.find("kopt_forward") == std::string::npos)
    throw Error(cand_label +
                " defines no kopt_forward: a cuda candidate must implement include/kopt/abi.h.");
  if (c.kind == CandidateKind::kHybrid && !Has(c.source, R"(^class\s+ModelNew\s*[(:])"))
    throw Error(cand_label +
                " defines no top-level `class ModelNew`: a hybrid candidate is a KernelBench "
                "ModelNew file.");
  if (r.recipe.empty()) throw Error("the export has no nvcc recipe: build it with ExportRecipe.");
  if (!std::regex_match(r.arch, std::regex(R"(sm_\d+[a-z]?)")))
    throw Error("arch '" + r.arch +
                "' is not an SM architecture: use a name like sm_90 or sm_90a.");
  if (c.kind == CandidateKind::kCuda && r.abi_header.empty())
    throw Error("the export has no ABI header text: pass the contents of include/kopt/abi.h.");

  std::string task_name = r.task_path.empty() ? "task" : r.task_path.stem().string();
  std::string name = SafeStem(!r.name.empty()   ? r.name
                              : !c.name.empty() ? fs::path(c.name).stem().string()
                                                : task_name);
  if (name.empty()) name = "kernel";

  Rewrite rewrite;
  if (c.kind == CandidateKind::kHybrid) rewrite = ReplaceKoptImports(c.source, cand_label);
  if (rewrite.changed && r.abi_header.empty())
    throw Error("the export has no ABI header text: pass the contents of include/kopt/abi.h.");

  std::error_code ec;
  if (fs::exists(r.out_dir, ec) && !fs::is_directory(r.out_dir, ec))
    throw Error(r.out_dir.string() + " exists and is not a folder: choose another --out.");
  fs::create_directories(r.out_dir, ec);
  if (ec) throw Error("cannot create " + r.out_dir.string() + ": " + ec.message() + ".");

  ExportedFiles files;
  files.modelnew = r.out_dir / (name + "_modelnew.py");
  files.readme = r.out_dir / "README.md";
  files.embedded_loader = rewrite.changed;
  if (c.kind == CandidateKind::kCuda) {
    files.cu = r.out_dir / (name + ".cu");
    files.header = r.out_dir / "kopt" / "abi.h";
    WriteTextFileAtomic(files.cu, c.source);
    fs::create_directories(files.header.parent_path(), ec);
    if (ec)
      throw Error("cannot create " + files.header.parent_path().string() + ": " + ec.message() +
                  ".");
    WriteTextFileAtomic(files.header, r.abi_header);
    WriteTextFileAtomic(files.modelnew, CudaModelNew(r, name, task_source));
  } else {
    WriteTextFileAtomic(files.modelnew, HybridModelNew(r, name, rewrite));
  }
  WriteTextFileAtomic(files.readme, Readme(r, name, files, task_name));
  return files;
}

std::string ReferenceModelNewSource(const std::string& task_source, const std::string& why) {
  std::string s = task_source;
  if (!s.empty() && s.back() != '\n') s += '\n';
  std::string note;
  for (char c : why) note += c == '\n' ? ' ' : c;
  s += "\n\n# kopt: the reference, kept: " + note + "\n";
  s += "class ModelNew(Model):\n    \"\"\"The task's own Model, unchanged.\"\"\"\n";
  return s;
}

}  // namespace kopt
