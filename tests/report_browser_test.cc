// `kopt report RUN` opened in headless Chromium: the page renders, and its
// screenshot shows the search tree, the best-over-time chart and the diff
// where the page's layout puts them.
//
// How the screenshot is checked without depending on fonts: a copy of the
// page with a small script added at its end asks the browser for the box of
// every element with an id (--dump-dom prints the answer); the screenshot
// of the page itself, at the same width, is then searched for the colours
// only those pictures use (run_charts.h, run_colors), inside and outside
// those boxes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "report/run_charts.h"
#include "store/run_store.h"
#include "testing/paths.h"
#include "testing/png.h"
#include "testing/run_fixture.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;
using testing::Image;
using testing::Rgb;

constexpr int kWidth = 1280;
constexpr int kMaxHeight =
    16000;  // Chromium draws taller pages, but slowly; the checks stay above this

std::string Chromium() {
  if (const char* p = std::getenv("KOPT_CHROMIUM"); p && *p) return p;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (std::string p = FindOnPath(name); !p.empty()) return p;
  return "";
}

ProcessResult RunChromium(const fs::path& work, const std::vector<std::string>& args, int height) {
  std::vector<std::string> argv = {Chromium(),
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-dev-shm-usage",
                                   "--no-first-run",
                                   "--disable-extensions",
                                   "--hide-scrollbars",
                                   "--force-device-scale-factor=1",
                                   "--force-color-profile=srgb",
                                   "--user-data-dir=" + (work / "chromium-profile").string(),
                                   fmt::format("--window-size={},{}", kWidth, height)};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions o;
  o.timeout_s = 120;
  o.env["HOME"] = work.string();  // Chromium writes caches there
  o.env["XDG_CONFIG_HOME"] = (work / "config").string();
  o.env["XDG_CACHE_HOME"] = (work / "cache").string();
  return RunProcess(argv, o);
}

struct Box {
  double x = 0, y = 0, w = 0, h = 0;
};

// The page's boxes by element id, and its whole height, as the browser laid
// it out at kWidth.
std::map<std::string, Box> Geometry(const fs::path& work, const fs::path& page, int* page_height) {
  std::string html = ReadTextFile(page);
  const std::string probe =
      "<pre id=\"kopt-geometry\"></pre><script>"
      "var r={};for(const e of document.querySelectorAll('[id]')){const "
      "b=e.getBoundingClientRect();"
      "r[e.id]=[b.left+scrollX,b.top+scrollY,b.width,b.height];}"
      "r['kopt-page']=[0,0,document.documentElement.scrollWidth,document.documentElement."
      "scrollHeight];"
      "document.getElementById('kopt-geometry').textContent=JSON.stringify(r);</script>";
  size_t end = html.rfind("</body>");
  EXPECT_NE(end, std::string::npos);
  html.insert(end, probe);
  const fs::path probe_page = work / "probe.html";
  WriteTextFileAtomic(probe_page, html);
  ProcessResult r = RunChromium(work, {"--dump-dom", "file://" + probe_page.string()}, 900);
  EXPECT_TRUE(r.ok()) << r.err;
  std::smatch m;
  static const std::regex kGeometry(R"re(<pre id="kopt-geometry">([^<]*)</pre>)re");
  std::map<std::string, Box> boxes;
  if (!std::regex_search(r.out, m, kGeometry)) {
    ADD_FAILURE() << "the probe's geometry is not in the dumped DOM:\n"
                  << r.out.substr(0, 2000) << r.err;
    return boxes;
  }
  Json j = Json::parse(m[1].str());
  for (auto it = j.begin(); it != j.end(); ++it)
    boxes[it.key()] = {(*it)[0].get<double>(), (*it)[1].get<double>(), (*it)[2].get<double>(),
                       (*it)[3].get<double>()};
  *page_height = static_cast<int>(std::ceil(boxes["kopt-page"].h));
  return boxes;
}

bool Near(const Rgb& a, const Rgb& b, int tolerance = 10) {
  return std::abs(a.r - b.r) <= tolerance && std::abs(a.g - b.g) <= tolerance &&
         std::abs(a.b - b.b) <= tolerance;
}

// Pixels of `color` in one box, in any box of its kind (the same picture of
// every task), and in the whole screenshot.
struct Count {
  long inside = 0, in_kind = 0, total = 0;
  long outside() const { return total - in_kind; }
};
bool In(const Box& b, int x, int y) {
  return x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + b.h;
}
Count CountColor(const Image& img, const Box& box, const std::vector<Box>& kind,
                 const std::string& hex, int tolerance = 10) {
  const Rgb c = testing::ParseHexColor(hex);
  Count n;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      if (!Near(img.at(x, y), c, tolerance)) continue;
      ++n.total;
      if (In(box, x, y)) ++n.inside;
      for (const Box& b : kind)
        if (In(b, x, y)) {
          ++n.in_kind;
          break;
        }
    }
  return n;
}

size_t Occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + what.size()))
    ++n;
  return n;
}

// The text of the element with this id in `html` (to the end of the page
// when it cannot tell where it ends: enough to count what it holds).
std::string Element(const std::string& html, const std::string& id, const std::string& tag) {
  size_t a = html.find("id=\"" + id + "\"");
  if (a == std::string::npos) return "";
  size_t b = html.find("</" + tag + ">", a);
  return html.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

struct Expect {
  /// The fixture: every task has measured nodes and a best with a parent,
  /// so every picture must be drawn. A recorded run may lack some.
  bool every_picture = true;
};

// Renders `run_id` from the store at `db` and checks the page and its screenshot.
void CheckRunPage(const fs::path& db, const std::string& run_id, int tasks, const Expect& expect) {
  const fs::path work = testing::ScratchDir("browser");
  const fs::path page = work / "run.html";
  ProcessOptions o;
  o.timeout_s = 120;
  ProcessResult k = RunProcess(
      {KOPT_BINARY, "report", run_id.substr(0, 15), "--store", db.string(), "-o", page.string()},
      o);
  ASSERT_TRUE(k.ok()) << k.out << k.err;

  // The DOM Chromium builds from the page holds every section.
  ProcessResult dom = RunChromium(work, {"--dump-dom", "file://" + page.string()}, 900);
  ASSERT_TRUE(dom.ok()) << dom.err;
  for (const char* id : {"run-header", "budget", "summary"})
    EXPECT_NE(dom.out.find(fmt::format("id=\"{}\"", id)), std::string::npos) << id;
  for (int i = 0; i < tasks; ++i)
    for (const char* part : {"task", "tree", "progress", "diff", "diagnoses", "nodes"})
      EXPECT_NE(dom.out.find(fmt::format("id=\"{}-{}\"", part, i)), std::string::npos)
          << part << "-" << i;
  EXPECT_NE(dom.out.find("kopt run " + run_id), std::string::npos);
  EXPECT_EQ(Occurrences(dom.out, "<script"), 0u);

  int page_height = 0;
  std::map<std::string, Box> boxes = Geometry(work, page, &page_height);
  ASSERT_GT(page_height, 600);
  const int height = std::min(page_height, kMaxHeight);
  const fs::path png = work / "run.png";
  ProcessResult shot =
      RunChromium(work, {"--screenshot=" + png.string(), "file://" + page.string()}, height);
  ASSERT_TRUE(shot.ok()) << shot.err;

  Image img;
  std::string why;
  ASSERT_TRUE(testing::ReadPng(png, &img, &why)) << why;
  EXPECT_EQ(img.width, kWidth);
  EXPECT_EQ(img.height, height);
  // Not blank: a fair share of the page is drawn, in many colours.
  long inked = 0;
  std::map<int, int> colors;
  for (const Rgb& p : img.pixels) {
    if (!Near(p, {255, 255, 255}, 6)) ++inked;
    ++colors[(p.r >> 3) << 10 | (p.g >> 3) << 5 | (p.b >> 3)];
  }
  EXPECT_GT(inked, static_cast<long>(img.pixels.size() / 50)) << "the screenshot is almost blank";
  EXPECT_GT(colors.size(), 30u);

  std::vector<Box> trees, charts, diffs;
  for (int i = 0; i < tasks; ++i) {
    for (auto [kind, list] : {std::pair{"tree", &trees}, {"progress", &charts}, {"diff", &diffs}}) {
      const std::string id = fmt::format("{}-{}", kind, i);
      ASSERT_TRUE(boxes.count(id)) << id << " has no box";
      list->push_back(boxes[id]);
    }
  }
  for (int i = 0; i < tasks; ++i) {
    SCOPED_TRACE(fmt::format("task {}", i));
    const Box tree = trees[i], chart = charts[i], diff = diffs[i];
    // Reading order: tree, then the chart, then the diff.
    EXPECT_LT(tree.y, chart.y);
    EXPECT_LT(chart.y, diff.y);
    if (diff.y + diff.h > height) continue;  // below the screenshot (a very long page)

    // The tree: each node colour the SVG uses fills its circles inside the
    // tree's box (about 250 px a node), and in no other part of the page.
    const std::string tree_svg = Element(dom.out, fmt::format("tree-{}", i), "svg");
    const std::string chart_svg = Element(dom.out, fmt::format("progress-{}", i), "svg");
    const size_t drawn = Occurrences(tree_svg, "class=\"node\"");
    const bool measured = chart_svg.find("<svg") != std::string::npos;
    if (!expect.every_picture && (drawn == 0 || !measured)) continue;
    EXPECT_GT(drawn, 0u);
    long node_pixels = 0;
    for (const char* color :
         {run_colors::kFaster, run_colors::kSlower, run_colors::kIncorrect,
          run_colors::kBuildFailed, run_colors::kCrashed, run_colors::kTimedOut}) {
      if (tree_svg.find(fmt::format("fill=\"{}\"", color)) == std::string::npos) continue;
      Count c = CountColor(img, tree, trees, color);
      EXPECT_GE(c.inside, 120) << color << " is used by the tree but hardly drawn in its box";
      EXPECT_LE(c.outside(), c.in_kind / 20 + 40) << color << " is drawn outside the trees";
      node_pixels += c.inside;
    }
    EXPECT_GE(node_pixels, static_cast<long>(drawn) * 120) << drawn << " nodes";
    EXPECT_GE(CountColor(img, tree, trees, run_colors::kBestRing).inside, 100)
        << "the best node's ring";

    // The chart: the best-so-far steps in their two colours.
    ASSERT_TRUE(measured) << "no chart drawn";
    Count eager = CountColor(img, chart, charts, run_colors::kBestVsEager);
    EXPECT_GE(eager.inside, 600) << "the best-over-eager line";
    EXPECT_LE(eager.outside(), eager.in_kind / 20 + 40) << "the best-over-eager colour elsewhere";
    if (chart_svg.find(std::string("stroke=\"") + run_colors::kBestVsCompile) !=
        std::string::npos) {
      EXPECT_GE(CountColor(img, chart, charts, run_colors::kBestVsCompile).inside, 400)
          << "the best-over-compile line";
    }

    // The diff: removed and added lines on their backgrounds.
    const bool has_diff =
        Element(dom.out, fmt::format("diff-{}", i), "table").find("class=\"diff\"") !=
        std::string::npos;
    if (expect.every_picture) {
      EXPECT_TRUE(has_diff) << "the fixture's best has a parent: its diff must be drawn";
    }
    if (has_diff) {
      Count added = CountColor(img, diff, diffs, run_colors::kDiffAdded, 2);
      Count removed = CountColor(img, diff, diffs, run_colors::kDiffRemoved, 2);
      EXPECT_GE(added.inside, 1000) << "added lines";
      EXPECT_GE(removed.inside, 1000) << "removed lines";
      EXPECT_LE(added.outside() + removed.outside(), 100) << "diff colours outside the diffs";
    }
  }
}

TEST(ReportBrowser, ChromiumIsInstalled) {
  ASSERT_FALSE(Chromium().empty())
      << "headless Chromium is needed to check the HTML reports: run scripts/setup (it installs "
         "Debian's "
         "`chromium`), or set KOPT_CHROMIUM to a Chromium or Chrome binary.";
  ProcessResult r = RunProcess({Chromium(), "--version"});
  EXPECT_TRUE(r.ok()) << r.err;
}

// The fixture run (tests/testing/run_fixture.h), then every run of every run
// store recorded on a GPU machine (tests/data/runs/*.db), when there is one.
TEST(ReportBrowser, RunPagesShowTreeChartAndDiff) {
  ASSERT_FALSE(Chromium().empty()) << "no chromium: run scripts/setup";
  {
    SCOPED_TRACE("the fixture run");
    const fs::path db = testing::ScratchDir("browser-store") / "runs.db";
    std::string id;
    {
      testing::FixtureStore f = testing::MakeFixtureSqlite(db);
      id = f.run_id;
    }  // closed: the kopt process reads the file
    CheckRunPage(db, id, 2, {});
  }
  for (const fs::path& recorded : testing::RecordedRunStores()) {
    SCOPED_TRACE(recorded.string());
    const fs::path db = testing::ScratchDir("browser-recorded") / recorded.filename();
    fs::copy_file(recorded, db);  // readers may leave -wal/-shm files beside it
    std::vector<RunSummary> runs = MakeSqliteRunStore(db)->ListRuns(0);
    ASSERT_FALSE(runs.empty());
    for (const auto& r : runs)
      CheckRunPage(db, r.run.id, static_cast<int>(r.tasks.size()), {.every_picture = false});
  }
}

}  // namespace
}  // namespace kopt
