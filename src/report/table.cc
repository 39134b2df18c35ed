#include "report/table.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kopt {
namespace {

bool LooksNumeric(const std::string& s) {
  if (s.empty() || s == "-") return true;
  bool digit = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) digit = true;
    else if (!std::strchr(".-+eE%x ", c)) return false;
  }
  return digit;
}

// Display width: counts UTF-8 code points, not bytes.
size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

void Table::AlignLeft(size_t column) { left_.push_back(column); }

std::string Table::Render() const {
  size_t n = headers_.size();
  std::vector<size_t> width(n);
  std::vector<bool> right(n, true);
  for (size_t c = 0; c < n; ++c) {
    width[c] = Width(headers_[c]);
    for (const auto& r : rows_) {
      width[c] = std::max(width[c], Width(r[c]));
      if (!LooksNumeric(r[c])) right[c] = false;
    }
    if (std::find(left_.begin(), left_.end(), c) != left_.end()) right[c] = false;
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < n; ++c) {
      std::string pad(width[c] - Width(cells[c]), ' ');
      out += right[c] ? pad + cells[c] : cells[c] + (c + 1 < n ? pad : "");
      if (c + 1 < n) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers_);
  size_t total = 0;
  for (size_t c = 0; c < n; ++c) total += width[c] + (c + 1 < n ? 2 : 0);
  out += std::string(total, '-') + "\n";
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string FormatMs(double ms, int digits) {
  if (!(ms >= 0) || std::isnan(ms)) return "-";
  return fmt::format("{:.{}g}", ms, digits);
}

std::string FormatRatio(double r) {
  if (!(r > 0) || std::isnan(r)) return "-";
  return fmt::format("{:.2f}x", r);
}

std::string FormatPercent(double f) {
  if (!(f >= 0) || std::isnan(f)) return "-";
  return fmt::format("{:.0f}%", 100 * f);
}

}  // namespace kopt
