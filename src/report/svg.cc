#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace kopt {
namespace {

constexpr double kWidth = 760;
constexpr double kLabelWidth = 280;  // bar labels, left of the plot
constexpr double kTextWidth = 110;   // bar values, right of the plot

double Log10(double v) { return std::log10(std::max(v, 1e-300)); }

// Presentation attributes per element class, inline so that an SVG cut out
// of the page (or opened by a tool that ignores the page's CSS) looks the same.
std::string Style(const std::string& cls) {
  static const std::map<std::string, std::string> kStyles = {
      {"title", "font-size=\"13\" font-weight=\"600\" fill=\"#1d2330\""},
      {"tick", "fill=\"#667\""},
      {"axis", "fill=\"#667\""},
      {"label", "fill=\"#283040\""},
      {"value", "fill=\"#283040\""},
      {"clip", "fill=\"#ffffff\""},
      {"roof-label", "fill=\"#334\""},
      {"point-label", "font-weight=\"600\" fill=\"#283040\""},
      {"grid", "stroke=\"#e6e8ef\""},
      {"reference", "stroke=\"#1d2330\" stroke-dasharray=\"4 3\""},
      {"drop", "stroke=\"#d0574f\" stroke-dasharray=\"3 3\""},
      {"bar", "fill=\"#6f8fce\""},
      {"good", "fill=\"#3f9d5a\""},
      {"bad", "fill=\"#d0574f\""},
      {"neutral", "fill=\"#9aa3b5\""},
      {"roof0", "fill=\"none\" stroke-width=\"2\" stroke=\"#3b6fd8\""},
      {"roof1", "fill=\"none\" stroke-width=\"2\" stroke=\"#8a4fd8\""},
      {"roof2", "fill=\"none\" stroke-width=\"2\" stroke=\"#d87a3b\""},
      {"roof3", "fill=\"none\" stroke-width=\"2\" stroke=\"#3bb0a8\""},
      {"point", "fill=\"#d0574f\" stroke=\"#ffffff\" stroke-width=\"1.5\""},
  };
  auto it = kStyles.find(cls);
  return it == kStyles.end() ? kStyles.at("bar") : it->second;
}

std::string Num(double v) { return fmt::format("{:.1f}", v); }

std::string Text(double x, double y, const std::string& s, const char* anchor = "start",
                 const char* cls = "") {
  return fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" class=\"{}\" {}>{}</text>", Num(x), Num(y), anchor,
                     cls, Style(cls), XmlEscape(s));
}

std::string Line(double x1, double y1, double x2, double y2, const char* cls) {
  return fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"{}\" {}/>", Num(x1), Num(y1), Num(x2),
                     Num(y2), cls, Style(cls));
}

// Labels longer than the label column are cut with an ellipsis (the full
// text stays in a <title> tooltip).
std::string Fit(const std::string& s, size_t max_chars) {
  return s.size() <= max_chars ? s : s.substr(0, max_chars - 1) + "\u2026";
}

std::string SvgOpen(double height, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 {} {}\" width=\"{}\" "
      "height=\"{}\" role=\"img\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\">"
      "<title>{}</title>",
      Num(kWidth), Num(height), Num(kWidth), Num(height), XmlEscape(title));
}

}  // namespace

std::string XmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string SiFormat(double v) {
  if (!std::isfinite(v)) return "-";
  static const std::pair<double, const char*> kPrefixes[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"},
                                                            {1e3, "k"}};
  double a = std::fabs(v);
  for (const auto& [scale, prefix] : kPrefixes) {
    if (a >= scale) return fmt::format("{:.3g} {}", v / scale, prefix);
  }
  return fmt::format("{:.3g}", v);
}

double Axis::Map(double v) const {
  double t;
  if (log) {
    t = (Log10(v) - Log10(lo)) / (Log10(hi) - Log10(lo));
  } else {
    t = hi > lo ? (v - lo) / (hi - lo) : 0;
  }
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  return px_lo + t * (px_hi - px_lo);
}

std::vector<double> Axis::Ticks() const {
  std::vector<double> ticks;
  if (!(hi > lo)) return ticks;
  if (log) {
    if (lo <= 0) return ticks;
    const int first = static_cast<int>(std::floor(Log10(lo) + 1e-9));
    const int last = static_cast<int>(std::ceil(Log10(hi) - 1e-9));
    const bool minor = last - first <= 2;
    for (int e = first; e <= last; ++e) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (m != 1.0 && !minor) continue;
        double v = m * std::pow(10.0, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
      }
    }
    return ticks;
  }
  double raw = (hi - lo) / 5;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return ticks;
}

std::string BarChartSvg(const BarChart& c) {
  const double row = 22, top = 44, bottom = 40;
  const double height = top + row * std::max<size_t>(c.bars.size(), 1) + bottom;
  Axis x;
  x.log = c.log_scale;
  x.px_lo = kLabelWidth;
  x.px_hi = kWidth - kTextWidth;
  double vmax = 0, vmin = 0;
  bool first = true;
  for (const auto& b : c.bars) {
    if (!std::isfinite(b.value) || (c.log_scale && b.value <= 0)) continue;
    double v = c.clip_at > 0 ? std::min(b.value, c.clip_at) : b.value;
    vmax = first ? v : std::max(vmax, v);
    vmin = first ? v : std::min(vmin, v);
    first = false;
  }
  if (c.reference) {
    vmax = first ? *c.reference : std::max(vmax, *c.reference);
    vmin = first ? *c.reference : std::min(vmin, *c.reference);
    first = false;
  }
  if (c.log_scale) {
    if (first) vmin = vmax = 1;
    x.lo = std::pow(10.0, std::floor(Log10(vmin)));
    x.hi = std::pow(10.0, std::ceil(Log10(vmax)));
    if (x.hi <= x.lo) x.hi = x.lo * 10;
  } else {
    x.lo = std::min(0.0, vmin);
    x.hi = vmax > x.lo ? vmax * 1.05 : x.lo + 1;
  }
  // Bars grow from the reference line on a log axis, else from zero.
  const double base = c.log_scale ? (c.reference ? *c.reference : x.lo) : 0.0;

  std::string s = SvgOpen(height, c.title);
  s += Text(8, 18, c.title, "start", "title");
  const double plot_bottom = top + row * c.bars.size();
  for (double t : x.Ticks()) {
    double px = x.Map(t);
    s += Line(px, top - 4, px, plot_bottom, "grid");
    s += Text(px, plot_bottom + 14, SiFormat(t), "middle", "tick");
  }
  s += Text((x.px_lo + x.px_hi) / 2, plot_bottom + 32, c.unit + (c.log_scale ? " (log scale)" : ""), "middle",
            "axis");
  if (c.reference) {  // under the bars and their values
    double px = x.Map(*c.reference);
    s += Line(px, top - 8, px, plot_bottom + 2, "reference");
    if (!c.reference_label.empty()) s += Text(px, top - 12, c.reference_label, "middle", "axis");
  }
  for (size_t i = 0; i < c.bars.size(); ++i) {
    const Bar& b = c.bars[i];
    const double y = top + row * i;
    s += "<g>";
    s += fmt::format("<title>{}: {}</title>", XmlEscape(b.label),
                     XmlEscape(b.text.empty() ? SiFormat(b.value) : b.text));
    s += Text(kLabelWidth - 8, y + row * 0.68, Fit(b.label, 40), "end", "label");
    const bool drawable = std::isfinite(b.value) && (!c.log_scale || b.value > 0);
    double end_px = x.px_lo;
    if (drawable) {
      const bool clipped = c.clip_at > 0 && b.value > c.clip_at;
      double v = clipped ? c.clip_at : b.value;
      double a = x.Map(base), e = x.Map(v);
      end_px = std::max(a, e);
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"bar {}\" {}/>",
                       Num(std::min(a, e)), Num(y + 3), Num(std::max(std::fabs(e - a), 1.0)), Num(row - 6),
                       XmlEscape(b.css_class), Style(b.css_class));
      if (clipped) s += Text(e - 3, y + row * 0.68, "\u25b8", "end", "clip");
    }
    s += Text(std::max(end_px, x.Map(base)) + 6, y + row * 0.68, b.text.empty() ? SiFormat(b.value) : b.text,
              "start", "value");
    s += "</g>";
  }
  s += "</svg>";
  return s;
}

std::string RooflineSvg(const RooflineChart& c) {
  const double bw = c.bandwidth_bytes_per_s;
  std::vector<RooflineCeiling> roofs;
  for (const auto& r : c.ceilings)
    if (r.flops_per_s > 0) roofs.push_back(r);
  std::vector<RooflinePoint> points;
  for (const auto& p : c.points)
    if (p.intensity > 0 && p.flops_per_s > 0 && std::isfinite(p.intensity) && std::isfinite(p.flops_per_s))
      points.push_back(p);
  if (bw <= 0 || roofs.empty() || points.empty()) return "";
  std::sort(roofs.begin(), roofs.end(),
            [](const RooflineCeiling& a, const RooflineCeiling& b) { return a.flops_per_s < b.flops_per_s; });

  // The domain covers every point and every ridge, a decade either side.
  double ai_lo = points[0].intensity, ai_hi = ai_lo, y_lo = points[0].flops_per_s, y_hi = y_lo;
  for (const auto& p : points) {
    ai_lo = std::min(ai_lo, p.intensity);
    ai_hi = std::max(ai_hi, p.intensity);
    y_lo = std::min(y_lo, p.flops_per_s);
    y_hi = std::max(y_hi, p.flops_per_s);
  }
  for (const auto& r : roofs) {
    ai_lo = std::min(ai_lo, r.flops_per_s / bw);
    ai_hi = std::max(ai_hi, r.flops_per_s / bw);
  }
  const double height = 440, left = 80, right = 150, top = 36, bottom = 56;
  Axis x{std::pow(10.0, std::floor(Log10(ai_lo)) - 1), std::pow(10.0, std::ceil(Log10(ai_hi)) + 1), left,
         kWidth - right, true};
  const double y_top = std::pow(10.0, std::ceil(Log10(std::max(roofs.back().flops_per_s, y_hi) * 1.2)));
  y_lo = std::min(y_lo, bw * x.lo);
  double y_bottom = std::pow(10.0, std::floor(Log10(y_lo)));
  y_bottom = std::max(y_bottom, y_top / 1e9);  // nine decades at most
  Axis y{y_bottom, y_top, height - bottom, top, true};

  std::string s = SvgOpen(height, c.title);
  s += Text(8, 20, c.title, "start", "title");
  for (double t : x.Ticks()) {
    s += Line(x.Map(t), top, x.Map(t), height - bottom, "grid");
    s += Text(x.Map(t), height - bottom + 16, SiFormat(t), "middle", "tick");
  }
  for (double t : y.Ticks()) {
    s += Line(left, y.Map(t), kWidth - right, y.Map(t), "grid");
    s += Text(left - 6, y.Map(t) + 4, SiFormat(t), "end", "tick");
  }
  s += Text((left + kWidth - right) / 2, height - 14, "arithmetic intensity (FLOP per DRAM byte, log scale)",
            "middle", "axis");
  s += fmt::format("<text transform=\"translate(18 {}) rotate(-90)\" text-anchor=\"middle\" class=\"axis\" "
                   "fill=\"#667\">"
                   "FLOP/s (log scale)</text>",
                   Num((top + height - bottom) / 2));
  // Each roof: the bandwidth slope up to its ridge, then flat.
  for (size_t i = 0; i < roofs.size(); ++i) {
    const double peak = roofs[i].flops_per_s, ridge = peak / bw;
    const double x0 = std::max(x.lo, y.lo / bw);
    std::string pts = fmt::format("{},{} ", Num(x.Map(x0)), Num(y.Map(bw * x0)));
    if (ridge > x0) pts += fmt::format("{},{} ", Num(x.Map(ridge)), Num(y.Map(peak)));
    pts += fmt::format("{},{}", Num(x.Map(x.hi)), Num(y.Map(peak)));
    s += fmt::format("<polyline points=\"{}\" class=\"roof roof{}\" {}/>", pts, i % 4,
                     Style(fmt::format("roof{}", i % 4)));
    s += Text(kWidth - right + 6, y.Map(peak) + 4, fmt::format("{} {}FLOP/s", roofs[i].label, SiFormat(peak)),
              "start", "roof-label");
  }
  {
    // The slope's label sits under it, low on the left (the line rises away from it).
    double ax = std::max(x.lo, y.lo / bw) * 3;
    s += Text(x.Map(ax) + 8, y.Map(bw * ax) + 14, fmt::format("{} {}B/s", c.bandwidth_label, SiFormat(bw)),
              "start", "roof-label");
  }
  for (const auto& p : points) {
    double roof = std::min(bw * p.intensity, roofs.back().flops_per_s);
    for (const auto& r : roofs) {  // the lowest roof at or above the point
      double at = std::min(bw * p.intensity, r.flops_per_s);
      if (at >= p.flops_per_s) {
        roof = at;
        break;
      }
    }
    double px = x.Map(p.intensity), py = y.Map(p.flops_per_s);
    // Above the roof means less work than the FLOPs and bytes the point was
    // placed with (an algebraic rewrite of the reference): said, not hidden.
    std::string where = roof >= p.flops_per_s ? fmt::format("{:.2f}x below the roof", roof / p.flops_per_s)
                                              : fmt::format("{:.2f}x above the roof", p.flops_per_s / roof);
    s += "<g>";
    s += fmt::format("<title>{}: {:.3g} FLOP/byte, {}FLOP/s, {}</title>", XmlEscape(p.label), p.intensity,
                     SiFormat(p.flops_per_s), where);
    if (roof > p.flops_per_s) s += Line(px, y.Map(roof), px, py, "drop");
    s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" class=\"point\" {}/>", Num(px), Num(py), Style("point"));
    s += Text(px + 8, py + 4, fmt::format("{} ({})", p.label, where), "start", "point-label");
    s += "</g>";
  }
  s += "</svg>";
  return s;
}

}  // namespace kopt
