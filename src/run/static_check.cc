#include "run/static_check.h"

#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

namespace kopt {
namespace {

// Python spellings of aten operators whose names differ (the dispatcher sees
// what torch's Python functions decompose into).
const std::map<std::string, std::vector<std::string>>& PythonAliases() {
  static const std::map<std::string, std::vector<std::string>> aliases = {
      {"mm", {"mm", "matmul"}},
      {"addmm", {"addmm", "matmul", "linear"}},
      {"bmm", {"bmm", "matmul"}},
      {"baddbmm", {"baddbmm", "matmul"}},
      {"mv", {"mv", "matmul"}},
      {"_softmax", {"softmax"}},
      {"_log_softmax", {"log_softmax"}},
      {"convolution", {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}},
      {"native_layer_norm", {"layer_norm"}},
      {"native_group_norm", {"group_norm"}},
      {"native_batch_norm", {"batch_norm"}},
      {"_native_batch_norm_legit", {"batch_norm"}},
      {"_native_batch_norm_legit_functional", {"batch_norm"}},
      {"max_pool2d_with_indices", {"max_pool2d"}},
      {"_scaled_dot_product_efficient_attention", {"scaled_dot_product_attention"}},
      {"_scaled_dot_product_flash_attention", {"scaled_dot_product_attention"}},
  };
  return aliases;
}

std::string BaseName(const std::string& op) {
  std::string b = op;
  if (auto p = b.find("::"); p != std::string::npos) b = b.substr(p + 2);
  if (auto p = b.find('.'); p != std::string::npos) b = b.substr(0, p);
  return b;
}

}  // namespace

std::string PythonCodeOnly(const std::string& src) {
  std::string out = src;
  size_t i = 0, n = src.size();
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < n; ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  while (i < n) {
    char c = src[i];
    if (c == '#') {
      size_t e = src.find('\n', i);
      if (e == std::string::npos) e = n;
      blank(i, e);
      i = e;
    } else if (c == '"' || c == '\'') {
      bool triple = i + 2 < n && src[i + 1] == c && src[i + 2] == c;
      std::string quote = triple ? std::string(3, c) : std::string(1, c);
      size_t j = i + quote.size();
      while (j < n) {
        if (src[j] == '\\') {
          j += 2;
          continue;
        }
        if (src.compare(j, quote.size(), quote) == 0) break;
        if (!triple && src[j] == '\n') break;  // unterminated: stop at the line end
        ++j;
      }
      size_t end = std::min(n, j + (j < n && src[j] != '\n' ? quote.size() : 0));
      blank(i, end);
      i = end;
    } else {
      ++i;
    }
  }
  return out;
}

std::vector<std::string> StaticContractReasons(const Candidate& candidate, const TaskBundle& bundle,
                                               const Contract& contract) {
  std::vector<std::string> reasons;
  if (contract.torch_ops || candidate.kind != CandidateKind::kHybrid) return reasons;
  std::string code = PythonCodeOnly(candidate.source);
  if (std::regex_search(code, std::regex(R"((^|[^\w])Model\s*\()")))
    reasons.push_back(
        "static check: the source constructs the task's Model, and the contract forbids calling torch "
        "operators");

  std::set<std::string> names;  // Python spellings of the reference's compute operators
  if (bundle.graph.is_object() && bundle.graph.contains("nodes") && bundle.graph["nodes"].is_array())
    for (const auto& node : bundle.graph["nodes"]) {
      std::string op = node.value("op", "");
      if (op.empty() || !IsTorchOp(op) || IsStructuralTorchOp(op)) continue;
      std::string base = BaseName(op);
      auto it = PythonAliases().find(base);
      if (it != PythonAliases().end()) {
        names.insert(it->second.begin(), it->second.end());
      } else {
        while (!base.empty() && base.back() == '_') base.pop_back();
        if (!base.empty() && base[0] != '_') names.insert(base);
      }
    }
  std::vector<std::string> found;
  for (const auto& name : names) {
    std::regex call(R"((^|[^\w.])(torch|F|functional|torch\.nn\.functional|nn\.functional|torch\.special|torch\.ops\.aten)\.)" +
                    name + R"(\s*\()");
    std::smatch m;
    if (std::regex_search(code, m, call)) found.push_back(m[2].str() + "." + name);
  }
  if (!found.empty()) {
    std::string list;
    for (size_t i = 0; i < found.size(); ++i) list += (i ? ", " : "") + found[i];
    reasons.push_back(fmt::format(
        "static check: the source calls {}, the reference's own operator{}, and the contract forbids calling torch "
        "operators",
        list, found.size() > 1 ? "s" : ""));
  }
  return reasons;
}

}  // namespace kopt
