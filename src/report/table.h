// Plain-text tables for the terminal: aligned columns, numbers to the right.
#pragma once

#include <string>
#include <vector>

namespace kopt {

class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void AddRow(std::vector<std::string> cells);
  /// Keeps `column` left-aligned even when its cells look numeric (ids
  /// such as "20261203-0812-3fa2").
  void AlignLeft(size_t column);
  /// Renders with a header rule; columns whose cells all look numeric (or
  /// are "-") are right-aligned.
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> left_;
};

/// Formats a value with `digits` significant digits, or "-" when absent
/// (negative or NaN means absent).
std::string FormatMs(double ms, int digits = 4);
/// "2.31x", or "-".
std::string FormatRatio(double ratio);
/// "87%", or "-".
std::string FormatPercent(double fraction);

}  // namespace kopt
