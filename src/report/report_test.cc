#include <gtest/gtest.h>

#include <regex>

#include <fmt/format.h>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "report/html_report.h"
#include "report/svg.h"
#include "report/table.h"
#include "testing/paths.h"

namespace kopt {
namespace {

TEST(Table, AlignsTextLeftAndNumbersRight) {
  Table t({"task", "ms", "verdict"});
  t.AddRow({"01_relu", "1.25", "correct"});
  t.AddRow({"10_long_name", "12.5", "incorrect"});
  std::string s = t.Render();
  EXPECT_EQ(s,
            "task            ms  verdict\n"
            "-----------------------------\n"
            "01_relu       1.25  correct\n"
            "10_long_name  12.5  incorrect\n");
}

TEST(Table, Formats) {
  EXPECT_EQ(FormatMs(1.23456), "1.235");
  EXPECT_EQ(FormatMs(-1), "-");
  EXPECT_EQ(FormatRatio(2.0), "2.00x");
  EXPECT_EQ(FormatRatio(0), "-");
  EXPECT_EQ(FormatPercent(0.875), "88%");
}


// ---------------------------------------------------------------------------
// SVG and HTML reports

Json Data(const std::string& rel) { return ReadJsonFile(testing::SourceDir() / "tests/data" / rel); }

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + what.size())) ++n;
  return n;
}

std::vector<std::string> SvgBlocks(const std::string& html) {
  std::vector<std::string> out;
  for (size_t a = html.find("<svg"); a != std::string::npos; a = html.find("<svg", a + 1)) {
    size_t b = html.find("</svg>", a);
    if (b == std::string::npos) break;
    out.push_back(html.substr(a, b + 6 - a));
  }
  return out;
}

// Tags balance and nest (an XML parser's first check): every element opened
// is closed in order, text holds no raw '<', and attributes are quoted.
bool WellFormed(const std::string& xml, std::string* why) {
  std::vector<std::string> open;
  static const std::regex kTag(R"(<(/?)([a-zA-Z][\w-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(/?)>)");
  size_t pos = 0;
  while (pos < xml.size()) {
    size_t lt = xml.find('<', pos);
    if (lt == std::string::npos) break;
    std::smatch m;
    std::string rest = xml.substr(lt);
    if (!std::regex_search(rest, m, kTag, std::regex_constants::match_continuous)) {
      *why = "malformed tag at: " + rest.substr(0, 60);
      return false;
    }
    if (m[1] == "/") {
      if (open.empty() || open.back() != m[2]) {
        *why = "unexpected </" + m[2].str() + ">";
        return false;
      }
      open.pop_back();
    } else if (m[4] != "/") {
      open.push_back(m[2]);
    }
    pos = lt + m[0].length();
  }
  if (!open.empty()) *why = "unclosed <" + open.back() + ">";
  return open.empty();
}

TEST(Svg, EscapesAndFormats) {
  EXPECT_EQ(XmlEscape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  EXPECT_EQ(SiFormat(4.67e12), "4.67 T");
  EXPECT_EQ(SiFormat(1070.5e12), "1.07 P");
  EXPECT_EQ(SiFormat(0.5), "0.5");
}

TEST(Svg, AxesMapAndTick) {
  Axis log{1, 1000, 100, 400, true};
  EXPECT_DOUBLE_EQ(log.Map(1), 100);
  EXPECT_DOUBLE_EQ(log.Map(10), 200);
  EXPECT_DOUBLE_EQ(log.Map(1e6), 400);  // clamped
  EXPECT_EQ(log.Ticks(), (std::vector<double>{1, 10, 100, 1000}));
  Axis narrow{1, 100, 0, 1, true};  // two decades: 2 and 5 too
  EXPECT_EQ(narrow.Ticks(), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  Axis lin{0, 100, 0, 500, false};
  EXPECT_DOUBLE_EQ(lin.Map(50), 250);
  EXPECT_EQ(lin.Ticks(), (std::vector<double>{0, 20, 40, 60, 80, 100}));
}

TEST(Svg, BarsAndRooflineAreWellFormed) {
  BarChart c{"speedups <&>", "x", {{"a<b", 2.0, "", "good"}, {"slow", 0.5, "", "bad"}, {"zero", 0, "", ""}}, true,
             1.0, "1x", 0};
  std::string s = BarChartSvg(c), why;
  EXPECT_TRUE(WellFormed(s, &why)) << why;
  EXPECT_EQ(Count(s, "<rect"), 2u);  // a zero cannot sit on a log axis: label only
  EXPECT_NE(s.find("a&lt;b"), std::string::npos);

  RooflineChart r;
  r.bandwidth_bytes_per_s = 4e12;
  r.ceilings = {{"fp32", 60e12}, {"bf16", 800e12}};
  r.points = {{"call", 1.0, 2e12}};  // the roof at 1 FLOP/byte is 4 TFLOP/s: 2x below it
  s = RooflineSvg(r);
  EXPECT_TRUE(WellFormed(s, &why)) << why;
  EXPECT_NE(s.find("call (2.00x below the roof)"), std::string::npos) << s;
  EXPECT_EQ(Count(s, "<polyline"), 2u);
  r.points = {{"rewrite", 1.0, 8e12}};  // faster than the roof allows for the work it was placed with
  EXPECT_NE(RooflineSvg(r).find("rewrite (2.00x above the roof)"), std::string::npos);
  r.bandwidth_bytes_per_s = 0;
  EXPECT_EQ(RooflineSvg(r), "");
}

TEST(HtmlReport, KindsAndErrors) {
  EXPECT_EQ(DetectReportKind(Data("report/bench_h200_s3.json")), ReportKind::kBench);
  EXPECT_EQ(DetectReportKind(Data("gpu/eval_01_relu_faults.json")), ReportKind::kEval);
  EXPECT_EQ(DetectReportKind(Data("report/profile_axpb_slabs.json")), ReportKind::kProfile);
  EXPECT_FALSE(DetectReportKind(Json{{"task", 1}}));
  EXPECT_THROW(RenderHtmlReport(Json::array()), Error);
}

// The session-3 suite run on the H200: 37 tasks, 16 solutions measured.
TEST(HtmlReport, BenchFromTheH200Run) {
  Json j = Data("report/bench_h200_s3.json");
  std::string html = RenderHtmlReport(j), why;
  ASSERT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  auto svgs = SvgBlocks(html);
  ASSERT_EQ(svgs.size(), 3u);  // vs eager, vs compile, of floor
  for (const auto& s : svgs) EXPECT_TRUE(WellFormed(s, &why)) << why;
  EXPECT_EQ(Count(svgs[0], "<rect"), 16u);
  EXPECT_NE(svgs[0].find("60.59x"), std::string::npos);
  EXPECT_NE(svgs[2].find("4514%"), std::string::npos);  // clipped bar, real value in its text
  EXPECT_NE(html.find("37 tasks, 16 solutions, 16 measured correct."), std::string::npos);
  for (const auto& r : j["rows"]) EXPECT_NE(html.find(r["task"].get<std::string>()), std::string::npos);
  EXPECT_EQ(Count(html, "class=\"verdict-none\""), Count(html, ">no solution<"));
  EXPECT_EQ(Count(html, "<tr>"), j["rows"].size() + 1);
}

TEST(HtmlReport, EscapesWhatTasksAndReasonsSay) {
  Json j{{"suite", "s"},
         {"rows", {{{"task", "<b>&"}, {"solution", "x.cu"}, {"verdict", "incorrect"},
                    {"reason", "<script>alert(1)</script>"}}}}};
  std::string html = BenchHtml(j);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;&amp;"), std::string::npos);
}

// One Evaluator's five verdicts on the H200 (illegal address, hang, OOM,
// wrong answer, the ReLU solution).
TEST(HtmlReport, EvalShowsEveryVerdictAndTheFloor) {
  std::string html = RenderHtmlReport(Data("gpu/eval_01_relu_faults.json")), why;
  for (const char* v : {"crashed (cuda_error)", "timed out", "crashed (oom)", "incorrect", ">correct<"})
    EXPECT_NE(html.find(v), std::string::npos) << v;
  EXPECT_NE(html.find("illegal memory access"), std::string::npos);
  auto svgs = SvgBlocks(html);
  ASSERT_EQ(svgs.size(), 1u);
  EXPECT_TRUE(WellFormed(svgs[0], &why)) << why;
  EXPECT_EQ(Count(svgs[0], "<rect"), 2u);  // the measured candidate and its eager
  EXPECT_NE(svgs[0].find(">floor<"), std::string::npos);
}

TEST(HtmlReport, ProfileWithSourceCountersAndNoFlops) {
  std::string html = RenderHtmlReport(Data("report/profile_transpose_unpadded_source.json")), why;
  EXPECT_NE(html.find("memory.l1_shared"), std::string::npos);
  EXPECT_NE(html.find("No roofline"), std::string::npos);  // a transpose has no FLOPs
  EXPECT_EQ(Count(html, "class=\"diag\""), 2u);
  EXPECT_LT(html.find("<b>bank_conflicts</b>"), html.find("<b>warp_stalls</b>"));  // larger gain first
  EXPECT_NE(html.find("S2R R0, SR_TID.X"), std::string::npos);
  EXPECT_NE(html.find("mio_throttle (98%)"), std::string::npos);
  EXPECT_NE(html.find("ncu source"), std::string::npos);
  for (const auto& s : SvgBlocks(html)) EXPECT_TRUE(WellFormed(s, &why)) << why;
}

TEST(HtmlReport, ProfileRooflineAgreesWithTheHeadroom) {
  Json j = Data("report/profile_axpb_slabs.json");
  std::string html = RenderHtmlReport(j);
  double headroom = j["report"]["call"]["headroom"].get<double>();
  EXPECT_NE(html.find(fmt::format("this call ({:.2f}x below the roof)", headroom)), std::string::npos) << headroom;
  EXPECT_NE(html.find("many_small_kernels"), std::string::npos);
  EXPECT_NE(html.find("GPU idle between kernels"), std::string::npos);
}

TEST(HtmlReport, PartialResultsRenderWhatTheyHave) {
  std::string html = ProfileHtml(Json{{"report", Json::object()}, {"context", Json::object()}});
  EXPECT_NE(html.find("unclassified"), std::string::npos);
  EXPECT_NE(html.find("Diagnoses (0)"), std::string::npos);
  html = EvalHtml(Json{{"records", {{{"candidate", "a.cu"}, {"outcome", {{"verdict", "measured"}}}}}}});
  EXPECT_NE(html.find("a.cu"), std::string::npos);
}

}  // namespace
}  // namespace kopt
