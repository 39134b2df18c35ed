// SVG charts for kopt's HTML reports: horizontal bars and the roofline, each a
// self-contained <svg> element (no scripts, no external files, no fonts).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kopt {

/// Escapes &, <, >, " and ' for text and attribute values in HTML and SVG.
std::string XmlEscape(const std::string& text);

/// "4.67 T", "802 G", "1.5", "0.012": three significant digits with an SI prefix.
std::string SiFormat(double value);

/// A value axis mapped onto a pixel range, linear or log10.
struct Axis {
  double lo = 0, hi = 1;          ///< the domain (lo > 0 on a log axis)
  double px_lo = 0, px_hi = 100;  ///< where lo and hi land
  bool log = false;
  /// Pixel position of `v`, clamped to the axis.
  double Map(double v) const;
  /// Tick values inside [lo, hi]: each decade on a log axis (with 2 and 5
  /// when it spans two decades or less), 1-2-5 steps on a linear one.
  std::vector<double> Ticks() const;
};

struct Bar {
  std::string label;      ///< left of the bar
  double value = 0;
  std::string text;       ///< right of the bar; empty: the value, SI-formatted
  std::string css_class;  ///< colours the bar (good, bad, neutral, ...)
};

struct BarChart {
  std::string title;
  std::string unit;  ///< under the axis
  std::vector<Bar> bars;
  bool log_scale = false;
  /// A vertical line (1x for speedups, 100% for the floor); on a log axis the
  /// bars grow from it, so a slowdown points left.
  std::optional<double> reference;
  std::string reference_label;
  /// Bars longer than this are clipped (their text says the real value);
  /// 0: the largest value sets the axis.
  double clip_at = 0;
};

std::string BarChartSvg(const BarChart& chart);

struct RooflineCeiling {
  std::string label;  ///< "fp32", "bf16 tensor"
  double flops_per_s = 0;
};

struct RooflinePoint {
  std::string label;
  double intensity = 0;    ///< FLOP per DRAM byte
  double flops_per_s = 0;  ///< achieved
};

/// Attainable FLOP/s against FLOP per byte on log-log axes: one roof per
/// compute ceiling under the shared bandwidth slope, and each point with a
/// dashed drop from the roof above it labelled with the distance.
struct RooflineChart {
  std::string title;
  double bandwidth_bytes_per_s = 0;
  std::string bandwidth_label = "DRAM";
  std::vector<RooflineCeiling> ceilings;
  std::vector<RooflinePoint> points;
};

/// Empty when the chart cannot be drawn (no bandwidth, no ceiling, or no
/// point with a positive intensity and rate).
std::string RooflineSvg(const RooflineChart& chart);

}  // namespace kopt
