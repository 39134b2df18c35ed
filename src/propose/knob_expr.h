// Constraint expressions of `// kopt:constraint` lines (docs/tuning.md):
// integer arithmetic over knob names, parsed by hand, never evaluated as code.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace kopt {

/// An integer expression: literals, names, + - * / % (C semantics, truncating
/// division), < <= > >= == !=, && || !, unary -, parentheses. Comparisons and
/// logic give 0 or 1; a constraint holds when its value is not 0.
class KnobExpr {
 public:
  /// Parses `text`. Throws kopt::Error, one sentence starting with `where`
  /// (e.g. "kernel.cu:12"), naming what is wrong and where in the text.
  static KnobExpr Parse(const std::string& text, const std::string& where);

  /// The value under `values`; nullopt when it divides by zero, overflows
  /// 64 bits, or names something `values` lacks.
  std::optional<long long> Evaluate(const std::map<std::string, long long>& values) const;

  /// Every name the expression reads.
  const std::set<std::string>& names() const { return names_; }
  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::set<std::string> names_;
  std::string text_;
};

}  // namespace kopt
