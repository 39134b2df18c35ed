#include "build/embedded_sources.h"

#include <regex>
#include <set>

namespace kopt {
namespace {

// Python reads a source file with universal newlines: a literal's "\r\n"
// reaches load_cuda as "\n".
std::string UniversalNewlines(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The text of `variable`'s one module-level binding to a raw triple-quoted
// literal, or nothing when it is bound otherwise, more than once, or
// declared global somewhere (a function may rebind it).
bool ModuleLiteral(const std::string& py, const std::string& variable, std::string* text) {
  const std::regex binding("(^|\\n)" + variable + "[ \\t]*(=|\\+=|:)(?!=)");
  const std::regex global("\\bglobal\\b[^\\n]*\\b" + variable + "\\b");
  if (std::regex_search(py, global)) return false;
  auto first = std::sregex_iterator(py.begin(), py.end(), binding);
  if (first == std::sregex_iterator() || std::next(first) != std::sregex_iterator()) return false;
  const std::smatch& m = *first;
  if (m[2].str() != "=") return false;
  std::size_t pos = static_cast<std::size_t>(m.position(0) + m.length(0));
  while (pos < py.size() && (py[pos] == ' ' || py[pos] == '\t')) ++pos;
  if (pos >= py.size() || (py[pos] != 'r' && py[pos] != 'R')) return false;
  ++pos;
  if (py.compare(pos, 3, "\"\"\"") != 0 && py.compare(pos, 3, "'''") != 0) return false;
  const std::string quote = py.substr(pos, 3);
  pos += 3;
  std::size_t end = py.find(quote, pos);
  if (end == std::string::npos) return false;
  // Nothing may follow the literal on its line but a comment: an edit such
  // as `""".replace(...)` or `""" + X` makes a different source.
  std::size_t after = end + 3;
  while (after < py.size() && (py[after] == ' ' || py[after] == '\t')) ++after;
  if (after < py.size() && py[after] != '\n' && py[after] != '\r' && py[after] != '#') return false;
  *text = UniversalNewlines(py.substr(pos, end - pos));
  return true;
}

}  // namespace

std::vector<EmbeddedSource> EmbeddedCudaSources(const std::string& python) {
  // load_cuda(NAME) or load_cuda(NAME, name="..."): any other argument
  // (flags) changes the build, so such a call is not matched.
  static const std::regex call(
      "load_cuda\\(\\s*([A-Za-z_][A-Za-z_0-9]*)\\s*(?:,\\s*name\\s*=\\s*([\"'])([^\"'\\n]*)\\2\\s*)"
      "?"
      "\\)");
  std::vector<EmbeddedSource> out;
  std::set<std::string> seen_variables, seen_sources;
  for (auto it = std::sregex_iterator(python.begin(), python.end(), call);
       it != std::sregex_iterator(); ++it) {
    const std::string variable = (*it)[1].str();
    if (!seen_variables.insert(variable).second) continue;
    std::string text;
    if (!ModuleLiteral(python, variable, &text)) continue;
    if (!seen_sources.insert(text).second) continue;
    out.push_back({variable, (*it)[3].str(), std::move(text)});
  }
  return out;
}

}  // namespace kopt
