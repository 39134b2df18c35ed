// Parsing `kopt:knob` / `kopt:constraint` lines and rewriting value tokens.
#include "propose/knobs.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace kopt {
namespace {

constexpr std::size_t kMaxValues = 1024;  // per knob; a larger range is a typo
constexpr char kExample[] =
    "e.g. `// kopt:knob THREADS 256 {128,256,512}` or `// kopt:knob ILP 1 1..8*2`";

struct Line {
  std::size_t start = 0;  ///< offset of its first byte in the source
  std::string text;       ///< without the newline (and a trailing '\r')
};

std::vector<Line> SplitLines(const std::string& source) {
  std::vector<Line> lines;
  std::size_t start = 0;
  while (start <= source.size()) {
    std::size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    Line l;
    l.start = start;
    l.text = source.substr(start, end - start);
    if (!l.text.empty() && l.text.back() == '\r') l.text.pop_back();
    lines.push_back(std::move(l));
    if (end == source.size()) break;
    start = end + 1;
    if (start == source.size()) break;  // a final newline ends the last line
  }
  return lines;
}

enum class Directive { kNone, kKnob, kConstraint };

/// A `kopt:` directive found in a comment of one line.
struct DirectiveAt {
  Directive kind = Directive::kNone;
  std::size_t marker = 0;   ///< where its `//` or `#` starts
  std::size_t body = 0;     ///< first byte after `kopt:knob` / `kopt:constraint`
  bool standalone = false;  ///< nothing but blanks before the marker
};

bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool IsBlank(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
}

std::string Trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

/// A directive is `kopt:` right after a `//` or `#` comment marker (blanks
/// allowed between); `kopt:` anywhere else is ordinary text.
DirectiveAt FindDirective(const std::string& text, const std::string& where) {
  DirectiveAt d;
  for (std::size_t at = text.find("kopt:"); at != std::string::npos;
       at = text.find("kopt:", at + 1)) {
    std::size_t b = at;
    while (b > 0 && (text[b - 1] == ' ' || text[b - 1] == '\t')) --b;
    std::size_t marker;
    if (b >= 2 && text.compare(b - 2, 2, "//") == 0) {
      marker = b - 2;
      while (marker > 0 && text[marker - 1] == '/') --marker;  // `///`
    } else if (b >= 1 && text[b - 1] == '#') {
      marker = b - 1;
    } else {
      continue;
    }
    std::size_t w = at + 5;
    while (w < text.size() && IsIdentChar(text[w])) ++w;
    const std::string word = text.substr(at + 5, w - at - 5);
    if (word.empty()) continue;  // `// kopt: some words` is a plain comment
    if (word == "knob") {
      d.kind = Directive::kKnob;
    } else if (word == "constraint") {
      d.kind = Directive::kConstraint;
    } else {
      throw Error(fmt::format(
          "{}: `kopt:{}` is not a kopt directive: write `kopt:knob` or `kopt:constraint` "
          "(docs/tuning.md).",
          where, word));
    }
    d.marker = marker;
    d.body = w;
    d.standalone = IsBlank(text.substr(0, marker));
    return d;
  }
  return d;
}

bool ParseInt(const std::string& s, long long* out) {
  static const std::regex kInt(R"(-?\d+)");
  if (!std::regex_match(s, kInt)) return false;
  try {
    *out = std::stoll(s);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

/// VALUES: `{a,b,c}` or a range `LO..HI`, `LO..HI+S`, `LO..HI*F`.
std::vector<long long> ParseValues(const std::string& text, const std::string& where,
                                   const std::string& name) {
  std::vector<long long> values;
  const std::string bad = fmt::format(
      "{}: kopt:knob {} has values `{}` that are neither a list `{{64,128,256}}` "
      "nor a range `LO..HI*2` / `LO..HI+1`: write one of those",
      where, name, text);
  if (!text.empty() && text.front() == '{') {
    if (text.back() != '}') throw Error(bad + ".");
    std::string inner = text.substr(1, text.size() - 2);
    std::size_t start = 0;
    while (start <= inner.size()) {
      std::size_t comma = inner.find(',', start);
      if (comma == std::string::npos) comma = inner.size();
      long long v = 0;
      if (!ParseInt(Trim(inner.substr(start, comma - start)), &v)) throw Error(bad + ".");
      values.push_back(v);
      if (values.size() > kMaxValues)
        throw Error(fmt::format("{}: kopt:knob {} lists more than {} values: list fewer.", where,
                                name, kMaxValues));
      start = comma + 1;
    }
  } else {
    static const std::regex kRange(R"((-?\d+)\.\.(-?\d+)(?:([*+])(\d+))?)");
    std::smatch m;
    if (!std::regex_match(text, m, kRange)) throw Error(bad + ".");
    long long lo = 0, hi = 0, step = 1;
    if (!ParseInt(m[1], &lo) || !ParseInt(m[2], &hi) || (m[4].matched && !ParseInt(m[4], &step)))
      throw Error(bad + ".");
    const bool geometric = m[3].matched && m[3] == "*";
    if (lo > hi)
      throw Error(fmt::format(
          "{}: kopt:knob {} has the range `{}` whose low end is above its high end: swap them.",
          where, name, text));
    if (geometric && (step < 2 || lo < 1))
      throw Error(fmt::format(
          "{}: kopt:knob {} has the range `{}`, which never grows: a `*F` range needs LO >= 1 "
          "and F >= 2.",
          where, name, text));
    if (!geometric && step < 1)
      throw Error(
          fmt::format("{}: kopt:knob {} has the range `{}` with step 0: use a step of 1 or more.",
                      where, name, text));
    for (long long v = lo; v <= hi;) {
      values.push_back(v);
      if (values.size() > kMaxValues)
        throw Error(fmt::format(
            "{}: kopt:knob {} has the range `{}` of more than {} values: use a larger step.", where,
            name, text, kMaxValues));
      long long next = 0;
      if (geometric ? __builtin_mul_overflow(v, step, &next)
                    : __builtin_add_overflow(v, step, &next))
        break;
      v = next;
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

/// The code of a line: the text before its comment (`//`, or for a line that
/// is not a preprocessor line, a Python `#`).
std::string CodePart(const std::string& text) {
  std::string code = text.substr(0, std::min(text.find("//"), text.size()));
  const std::string t = Trim(code);
  if (t.empty() || t[0] != '#') code = code.substr(0, std::min(code.find('#'), code.size()));
  return code;
}

/// Finds the integer literal a knob sets on `code`: `#define NAME v`, or
/// `NAME = v` (constexpr, template default, Python assignment). Returns how
/// many it found; `pos`/`len` locate the last one (the digits and sign).
int FindValue(const std::string& code, const std::string& name, std::size_t* pos,
              std::size_t* len) {
  int found = 0;
  const std::regex define(R"(^\s*#\s*define\s+)" + name + R"(\s+(-?\d+)[uUlL]*\s*$)");
  std::smatch m;
  if (std::regex_search(code, m, define)) {
    ++found;
    *pos = m.position(1);
    *len = m.length(1);
  }
  const std::regex assign(R"((^|[^A-Za-z0-9_]))" + name +
                          R"(\s*=\s*(-?\d+)[uUlL]*(?=\s*([;,>)}\]]|$)))");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), assign);
       it != std::sregex_iterator(); ++it) {
    ++found;
    *pos = it->position(2);
    *len = it->length(2);
  }
  return found;
}

/// splitmix64: a small, portable generator (results do not depend on the
/// standard library).
std::uint64_t NextRandom(std::uint64_t* state) {
  std::uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string JoinValues(const std::vector<long long>& values) {
  return fmt::format("{{{}}}", fmt::join(values, ","));
}

std::string ConfigText(const KnobConfig& config) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : config) parts.push_back(fmt::format("{}={}", name, value));
  return fmt::format("{}", fmt::join(parts, ","));
}

}  // namespace

KnobSpace KnobSpace::Parse(const std::string& source, const std::string& file) {
  KnobSpace space;
  space.source_ = source;
  space.file_ = file;
  const std::vector<Line> lines = SplitLines(source);
  std::vector<DirectiveAt> dirs(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i)
    dirs[i] = FindDirective(lines[i].text, fmt::format("{}:{}", file, i + 1));

  for (std::size_t i = 0; i < lines.size(); ++i) {
    const DirectiveAt& d = dirs[i];
    if (d.kind == Directive::kNone) continue;
    const std::string where = fmt::format("{}:{}", file, i + 1);
    const std::string& text = lines[i].text;
    if (d.kind == Directive::kConstraint) {
      const std::string expr = Trim(text.substr(d.body));
      KnobConstraint c{KnobExpr::Parse(expr, where), static_cast<int>(i + 1)};
      space.constraints_.push_back(std::move(c));
      continue;
    }

    // NAME DEFAULT VALUES [about]
    std::size_t p = d.body;
    auto skip_blanks = [&] {
      while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
    };
    auto word = [&] {
      skip_blanks();
      const std::size_t b = p;
      while (p < text.size() && !std::isspace(static_cast<unsigned char>(text[p]))) ++p;
      return std::pair<std::size_t, std::string>(b, text.substr(b, p - b));
    };
    const auto [name_at, name] = word();
    static const std::regex kIdent(R"([A-Za-z_][A-Za-z0-9_]*)");
    if (!std::regex_match(name, kIdent))
      throw Error(fmt::format(
          "{}: a kopt:knob line needs `NAME DEFAULT VALUES` with NAME an identifier, {}.", where,
          kExample));
    const auto [default_at, default_text] = word();
    long long default_value = 0;
    if (!ParseInt(default_text, &default_value))
      throw Error(fmt::format("{}: kopt:knob {} needs an integer DEFAULT after its name, {}.",
                              where, name, kExample));
    skip_blanks();
    std::string values_text;
    if (p < text.size() && text[p] == '{') {
      const std::size_t close = text.find('}', p);
      if (close == std::string::npos)
        throw Error(fmt::format(
            "{}: kopt:knob {} opens its value list with `{{` but never closes it: add the `}}`.",
            where, name));
      values_text = text.substr(p, close + 1 - p);
      p = close + 1;
    } else {
      values_text = word().second;
    }
    if (values_text.empty())
      throw Error(fmt::format("{}: kopt:knob {} needs VALUES after its default, {}.", where, name,
                              kExample));
    Knob knob;
    knob.name = name;
    knob.default_value = default_value;
    knob.values = ParseValues(values_text, where, name);
    knob.about = Trim(text.substr(std::min(p, text.size())));
    knob.line = static_cast<int>(i + 1);
    if (!std::binary_search(knob.values.begin(), knob.values.end(), default_value))
      throw Error(fmt::format(
          "{}: kopt:knob {} has the default {}, which is not one of its values {}: add it to "
          "the values.",
          where, name, default_value, JoinValues(knob.values)));
    for (const Knob& other : space.knobs_) {
      if (other.name == name)
        throw Error(
            fmt::format("{}: {} is already a knob (line {}): use one kopt:knob line per name.",
                        where, name, other.line));
    }

    // The line it sets: its own, or the first line below that is not a
    // directive of its own.
    std::size_t target = i;
    if (d.standalone) {
      target = i + 1;
      while (target < lines.size() && dirs[target].kind != Directive::kNone &&
             dirs[target].standalone)
        ++target;
    }
    const std::string forms = fmt::format(
        "`#define {0} <integer>`, `constexpr <type> {0} = <integer>;` or a template parameter `{0} "
        "= <integer>`",
        name);
    if (target >= lines.size())
      throw Error(fmt::format(
          "{}: kopt:knob {} has no line below it to set: put it on or directly above {}.", where,
          name, forms));
    const std::string& target_text = lines[target].text;
    std::string code = target_text.substr(
        0, dirs[target].kind != Directive::kNone ? dirs[target].marker : target_text.size());
    code = CodePart(code);
    std::size_t value_pos = 0, value_len = 0;
    const int found = FindValue(code, name, &value_pos, &value_len);
    if (found == 0)
      throw Error(fmt::format(
          "{}: kopt:knob {} finds no integer value of {} on line {}: put it on or directly "
          "above {}.",
          where, name, name, target + 1, forms));
    if (found > 1)
      throw Error(
          fmt::format("{}: line {} sets {} more than once: give the knob one definition to set.",
                      where, target + 1, name));
    long long code_value = 0;
    ParseInt(code.substr(value_pos, value_len), &code_value);
    if (code_value != default_value)
      throw Error(fmt::format(
          "{}: kopt:knob {} says the default is {} but line {} sets {}: make them equal.", where,
          name, default_value, target + 1, code_value));
    knob.value_line = static_cast<int>(target + 1);
    Site site;
    site.value_pos = lines[target].start + value_pos;
    site.value_len = value_len;
    site.default_pos = lines[i].start + default_at;
    site.default_len = default_text.size();
    space.knobs_.push_back(std::move(knob));
    space.sites_.push_back(site);
  }

  const KnobConfig defaults = space.Defaults();
  for (const KnobConstraint& c : space.constraints_) {
    const std::string where = fmt::format("{}:{}", file, c.line);
    for (const std::string& n : c.expr.names()) {
      if (!space.Find(n))
        throw Error(fmt::format(
            "{}: the constraint `{}` names {}, which is not a knob of this file: declare it with "
            "a kopt:knob line or fix the name.",
            where, c.expr.text(), n));
    }
    const auto v = c.expr.Evaluate(defaults);
    if (!v)
      throw Error(fmt::format(
          "{}: the constraint `{}` divides by zero or overflows at the defaults ({}): fix the "
          "constraint or the defaults.",
          where, c.expr.text(), space.Describe(defaults)));
    if (*v == 0)
      throw Error(fmt::format(
          "{}: the defaults ({}) break the constraint `{}`: fix the constraint or the defaults.",
          where, space.Describe(defaults), c.expr.text()));
  }
  return space;
}

const Knob* KnobSpace::Find(const std::string& name) const {
  for (const Knob& k : knobs_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

KnobConfig KnobSpace::Defaults() const {
  KnobConfig c;
  for (const Knob& k : knobs_) c[k.name] = k.default_value;
  return c;
}

KnobConfig KnobSpace::Complete(const KnobConfig& config) const {
  KnobConfig c = Defaults();
  for (const auto& [name, value] : config) c[name] = value;
  return c;
}

std::string KnobSpace::Check(const KnobConfig& config) const {
  for (const auto& [name, value] : config) {
    const Knob* k = Find(name);
    if (!k) return fmt::format("{} is not a knob of {}", name, file_);
    if (!std::binary_search(k->values.begin(), k->values.end(), value))
      return fmt::format("{}={} is not one of its values {}", name, value, JoinValues(k->values));
  }
  const KnobConfig full = Complete(config);
  for (const KnobConstraint& c : constraints_) {
    const auto v = c.expr.Evaluate(full);
    if (!v)
      return fmt::format("`{}` (line {}) cannot be evaluated: division by zero or overflow",
                         c.expr.text(), c.line);
    if (*v == 0) return fmt::format("breaks `{}` (line {})", c.expr.text(), c.line);
  }
  return "";
}

std::uint64_t KnobSpace::Size() const {
  std::uint64_t n = 1;
  for (const Knob& k : knobs_) {
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(k.values.size()), &n))
      return std::numeric_limits<std::uint64_t>::max();
  }
  return n;
}

std::vector<KnobConfig> KnobSpace::Enumerate(std::uint64_t max_visits) const {
  std::vector<KnobConfig> out;
  if (knobs_.empty()) return out;
  std::vector<std::size_t> index(knobs_.size(), 0);
  for (std::uint64_t visit = 0; visit < max_visits; ++visit) {
    KnobConfig c;
    for (std::size_t k = 0; k < knobs_.size(); ++k) c[knobs_[k].name] = knobs_[k].values[index[k]];
    if (Valid(c)) out.push_back(std::move(c));
    std::size_t k = knobs_.size();
    while (k > 0) {
      --k;
      if (++index[k] < knobs_[k].values.size()) break;
      index[k] = 0;
      if (k == 0) return out;
    }
  }
  return out;
}

std::optional<KnobConfig> KnobSpace::Sample(std::uint64_t seed, int tries) const {
  if (knobs_.empty()) return std::nullopt;
  std::uint64_t state = seed;
  for (int t = 0; t < tries; ++t) {
    KnobConfig c;
    for (const Knob& k : knobs_) c[k.name] = k.values[NextRandom(&state) % k.values.size()];
    if (Valid(c)) return c;
  }
  return std::nullopt;
}

std::string KnobSpace::Apply(const KnobConfig& config) const {
  const std::string why = Check(config);
  if (!why.empty())
    throw Error(fmt::format(
        "{}: the configuration {} is not allowed ({}): pick values the knob lines allow.", file_,
        ConfigText(config), why));
  struct Edit {
    std::size_t pos, len;
    std::string text;
  };
  std::vector<Edit> edits;
  for (std::size_t k = 0; k < knobs_.size(); ++k) {
    auto it = config.find(knobs_[k].name);
    if (it == config.end() || it->second == knobs_[k].default_value) continue;
    const std::string v = std::to_string(it->second);
    edits.push_back({sites_[k].value_pos, sites_[k].value_len, v});
    edits.push_back({sites_[k].default_pos, sites_[k].default_len, v});
  }
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.pos > b.pos; });
  std::string out = source_;
  for (const Edit& e : edits) out.replace(e.pos, e.len, e.text);
  return out;
}

std::string KnobSpace::Describe(const KnobConfig& config) const {
  const KnobConfig full = Complete(config);
  std::vector<std::string> parts;
  for (const Knob& k : knobs_) parts.push_back(fmt::format("{}={}", k.name, full.at(k.name)));
  return fmt::format("{}", fmt::join(parts, ","));
}

std::string ApplyKnobs(const std::string& source, const KnobConfig& config,
                       const std::string& file) {
  return KnobSpace::Parse(source, file).Apply(config);
}

}  // namespace kopt
