// The run's report, `kopt runs` and `kopt show` text, on the fixture run in
// a memory store and in a SQLite file.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "core/error.h"
#include "report/run_charts.h"
#include "report/run_report.h"
#include "report/run_text.h"
#include "report/table.h"
#include "report/run_view.h"
#include "testing/paths.h"
#include "testing/run_fixture.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + what.size()))
    ++n;
  return n;
}

// Tags balance and nest, text holds no raw '<', attributes are quoted (the
// void elements of HTML are allowed unclosed).
bool WellFormed(const std::string& html, std::string* why) {
  static const std::regex kTag(R"(<(/?)([a-zA-Z][\w-]*)((?:\s+[\w:-]+(?:="[^"<]*")?)*)\s*(/?)>)");
  static const std::set<std::string> kVoid = {"meta", "col", "br", "hr", "img", "input", "link"};
  std::vector<std::string> open;
  size_t pos = html.find("<html");
  while (pos < html.size()) {
    size_t lt = html.find('<', pos);
    if (lt == std::string::npos) break;
    std::smatch m;
    std::string rest = html.substr(lt, html.find('>', lt) + 1 - lt);  // attributes hold no raw >
    if (!std::regex_search(rest, m, kTag, std::regex_constants::match_continuous)) {
      *why = "malformed tag at: " + rest.substr(0, 80);
      return false;
    }
    const std::string name = m[2];
    if (m[1] == "/") {
      if (open.empty() || open.back() != name) {
        *why = "unexpected </" + name + "> with <" + (open.empty() ? "" : open.back()) + "> open";
        return false;
      }
      open.pop_back();
    } else if (m[4] != "/" && !kVoid.count(name)) {
      open.push_back(name);
    }
    pos = lt + m[0].length();
    if (name == "style" && m[1] != "/") pos = html.find("</style>", pos);  // CSS holds '>' freely
  }
  if (!open.empty()) *why = "unclosed <" + open.back() + ">";
  return open.empty();
}

class RunReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    memory_ = new testing::FixtureStore(testing::MakeFixtureMemory());
    view_ = new RunView(*LoadRunView(*memory_->store, memory_->run_id));
  }
  static void TearDownTestSuite() {
    delete view_;
    delete memory_;
  }
  static testing::FixtureStore* memory_;
  static RunView* view_;
};
testing::FixtureStore* RunReportTest::memory_ = nullptr;
RunView* RunReportTest::view_ = nullptr;

TEST_F(RunReportTest, ViewReadsTheRunTyped) {
  const RunView& v = *view_;
  EXPECT_EQ(v.run.status, RunStatus::kBudgetSpent);
  EXPECT_EQ(v.options.proposer, "tune");
  EXPECT_EQ(v.options.search, "mcts");
  EXPECT_EQ(v.options.objective, "time");
  ASSERT_TRUE(v.options.seed);
  EXPECT_EQ(*v.options.seed, 7);
  ASSERT_TRUE(v.options.budget);
  EXPECT_EQ(v.options.budget->candidates, 56);
  EXPECT_FALSE(v.options.argv.empty());
  ASSERT_TRUE(v.device);
  EXPECT_EQ(v.device->name, "NVIDIA H200");
  EXPECT_EQ(v.device->sm_count, 132);
  ASSERT_EQ(v.tasks.size(), 2u);
  EXPECT_EQ(v.run.spent.candidates, 56);

  const TaskView& softmax = v.tasks[0];
  EXPECT_EQ(softmax.record.name, "04_softmax");
  EXPECT_EQ(softmax.nodes.size(), 5u);  // THREADS has five values: the root and four children
  EXPECT_EQ(softmax.verdicts.at("measured"), 5);
  ASSERT_TRUE(softmax.root);
  EXPECT_EQ(*softmax.root, 0);
  const NodeView* root = softmax.Find(0);
  ASSERT_TRUE(root && root->time_ms && root->vs_eager);
  EXPECT_NEAR(*root->time_ms, 0.2572160065174103, 1e-12);  // the H200 eval record
  EXPECT_NEAR(*root->vs_eager, 1.2820975195976891, 1e-9);
  ASSERT_TRUE(softmax.best);
  const NodeView* best = softmax.Find(*softmax.best);
  EXPECT_NE(best->record.id, 0);
  EXPECT_EQ(best->record.move, "THREADS 512 -> 256");
  EXPECT_EQ(softmax.PathTo(best->record.id), (std::vector<int>{0, best->record.id}));
  EXPECT_TRUE(root->profiled);
  EXPECT_FALSE(root->diagnoses.empty());

  const TaskView& sum = v.tasks[1];
  EXPECT_EQ(sum.record.name, "10_sum_dim");
  EXPECT_EQ(static_cast<int>(sum.nodes.size()), 56 - 5);
  for (const char* verdict : {"measured", "incorrect", "build_failed", "crashed", "timed_out"})
    EXPECT_GT(sum.verdicts.count(verdict), 0u) << verdict;
  EXPECT_EQ(sum.evaluated, static_cast<int>(sum.nodes.size()));
  // The best so far never falls and starts at the root.
  ASSERT_EQ(sum.progress.size(), sum.nodes.size());
  EXPECT_EQ(sum.progress.front().node, 0);
  for (size_t i = 1; i < sum.progress.size(); ++i) {
    EXPECT_GE(*sum.progress[i].best_vs_eager, *sum.progress[i - 1].best_vs_eager);
    EXPECT_GT(*sum.progress[i].seconds, *sum.progress[i - 1].seconds);
  }
  const NodeView* sum_best = sum.Find(*sum.best);
  EXPECT_NEAR(*sum_best->vs_eager, *sum.progress.back().best_vs_eager, 1e-12);
  EXPECT_GT(sum_best->record.depth, 0);
  for (const auto& n : sum.nodes) {
    if (n.verdict == "incorrect") {
      EXPECT_NE(n.reason.find("relative L2"), std::string::npos);
    } else if (n.verdict == "build_failed") {
      EXPECT_NE(n.reason.find("error: identifier"), std::string::npos) << n.reason;
    } else if (n.verdict == "timed_out") {
      EXPECT_NE(n.reason.find("verify"), std::string::npos);
    }
  }
}

TEST_F(RunReportTest, PageHasEverySectionAndIsWellFormed) {
  const std::string html = RunHtml(*view_, "/tmp/runs.db");
  std::string why;
  EXPECT_TRUE(WellFormed(html, &why)) << why;
  EXPECT_EQ(Count(html, "<script"), 0u);
  EXPECT_EQ(Count(html, "http://") + Count(html, "https://"),
            Count(html, "http://www.w3.org/2000/svg"));
  for (const char* id : {"run-header", "budget", "summary", "task-0", "tree-0", "progress-0",
                         "diff-0", "diagnoses-0", "nodes-0", "task-1", "tree-1", "progress-1",
                         "diff-1", "diagnoses-1", "nodes-1"})
    EXPECT_EQ(Count(html, std::string("id=\"") + id + "\""), 1u) << id;
  EXPECT_NE(html.find("kopt run " + view_->run.id), std::string::npos);
  EXPECT_NE(html.find("THREADS 512 -&gt; 256"), std::string::npos);  // the best move, escaped
  EXPECT_NE(html.find(run_colors::kDiffAdded), std::string::npos);
  // Every candidate in the table; the diff shows the knob's two lines.
  EXPECT_EQ(Count(html, "<tr class=\"best\">"), 2u);
  EXPECT_NE(html.find("2 lines removed, 2 added"), std::string::npos);
  EXPECT_NE(html.find("class=\"mk del\">\u2212</td><td class=\"del\">// kopt:knob THREADS 512"),
            std::string::npos);
  EXPECT_NE(html.find("class=\"mk add\">+</td><td class=\"add\">// kopt:knob THREADS 256"),
            std::string::npos);
  // The budget: a bar per limited dimension, what was spent, the limits.
  EXPECT_NE(html.find("56 of 56 (100%)"), std::string::npos);
  // Diagnoses beside the moves made from the diagnosed node.
  EXPECT_NE(html.find("the moves made from it, and how they did"), std::string::npos);
  EXPECT_NE(html.find("suggested moves:"), std::string::npos);
}

TEST_F(RunReportTest, TreeDrawsOrCountsEveryNode) {
  for (const auto& t : view_->tasks) {
    const std::string svg = SearchTreeSvg(t);
    std::string why;
    EXPECT_TRUE(WellFormed("<html>" + svg + "</html>", &why)) << why;
    const size_t drawn = Count(svg, "<g class=\"node\">");
    size_t hidden = 0;
    static const std::regex kMore(R"re((\d+) more nodes? under #)re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), kMore);
         it != std::sregex_iterator(); ++it)
      hidden += std::stoul((*it)[1]);
    EXPECT_EQ(drawn + hidden, t.nodes.size()) << t.record.name;
    EXPECT_EQ(Count(svg, run_colors::kBestRing), 2u);  // the legend's and the best's
    // Each measured node is labelled with its speedup.
    TreeLayoutOptions few;
    few.max_columns = 6;
    const std::string narrow = SearchTreeSvg(t, few);
    EXPECT_EQ(
        Count(narrow, "<g class=\"node\">") +
            [&] {
              size_t h = 0;
              for (auto it = std::sregex_iterator(narrow.begin(), narrow.end(), kMore);
                   it != std::sregex_iterator(); ++it)
                h += std::stoul((*it)[1]);
              return h;
            }(),
        t.nodes.size());
  }
}

TEST_F(RunReportTest, ShowAndRunsText) {
  const std::string show = ShowText(*view_, 3);
  EXPECT_NE(show.find("run " + view_->run.id + ": budget_spent (candidates (56) spent)"),
            std::string::npos)
      << show;
  EXPECT_NE(show.find("options: proposer tune, search mcts, objective time, seed 7"),
            std::string::npos)
      << show;
  EXPECT_NE(show.find("task 0: 04_softmax"), std::string::npos);
  EXPECT_NE(show.find("from the root: #0, then #"), std::string::npos);
  EXPECT_NE(show.find("THREADS 512 -> 256"), std::string::npos);
  EXPECT_NE(show.find("fastest 3 of 5 measured"), std::string::npos) << show;
  EXPECT_NE(show.find("1 build failed"), std::string::npos) << show;

  std::vector<RunSummary> runs = memory_->store->ListRuns(0);
  ASSERT_EQ(runs.size(), 1u);
  const std::string text = RunsText(runs);
  EXPECT_NE(text.find(view_->run.id), std::string::npos);
  EXPECT_NE(text.find("2026-12-03 08:12 UTC"), std::string::npos) << text;
  EXPECT_NE(text.find("04_softmax 1.3"), std::string::npos) << text;
  EXPECT_NE(text.find("56 candidates"), std::string::npos);
  Json j = RunsJson(runs);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["tasks"][1]["evaluated"], 51);
  EXPECT_EQ(RunsText({}), "");

  Json s = ToJson(*view_);
  EXPECT_EQ(s["tasks"][0]["best"]["moves"], Json::array({"THREADS 512 -> 256"}));
  EXPECT_EQ(s["tasks"][1]["nodes"].size(), 51u);
  EXPECT_FALSE(s["tasks"][1]["nodes"][0].contains("source"));
}

TEST_F(RunReportTest, SqliteStoreGivesTheSamePage) {
  const fs::path db = testing::ScratchDir("run-report") / "runs.db";
  std::string id;
  { id = testing::MakeFixtureSqlite(db).run_id; }
  auto store = MakeSqliteRunStore(db);
  std::optional<RunView> v = LoadRunView(*store, id.substr(0, 16));
  ASSERT_TRUE(v);
  auto same_ids = [&](std::string s) {
    for (size_t p = s.find(id); p != std::string::npos; p = s.find(id, p))
      s.replace(p, id.size(), "RUN");
    return s;
  };
  std::string memory_html = RunHtml(*view_, "STORE");
  for (size_t p = memory_html.find(view_->run.id); p != std::string::npos;
       p = memory_html.find(view_->run.id, p))
    memory_html.replace(p, view_->run.id.size(), "RUN");
  EXPECT_EQ(same_ids(RunHtml(*v, "STORE")), memory_html);
  EXPECT_EQ(same_ids(ShowText(*v)), [&] {
    std::string s = ShowText(*view_);
    for (size_t p = s.find(view_->run.id); p != std::string::npos; p = s.find(view_->run.id, p))
      s.replace(p, view_->run.id.size(), "RUN");
    return s;
  }());
  fs::path out = db.parent_path() / "page.html";
  WriteRunReport(*store, id, db.string(), out);
  EXPECT_NE(ReadTextFile(out).find(db.string()), std::string::npos);
}

TEST(Table, AlignLeftKeepsIdsLeft) {
  Table t({"id", "n"});
  t.AlignLeft(0);
  t.AddRow({"20261203-0812-3fa2", "1"});
  t.AddRow({"20261203-0813-0001", "12"});
  EXPECT_EQ(t.Render(),
            "id                   n\n"
            "----------------------\n"
            "20261203-0812-3fa2   1\n"
            "20261203-0813-0001  12\n");
}

TEST(RunReport, UnknownAndAmbiguousRunsAreOneSentence) {
  using Clock = std::chrono::system_clock;
  auto store =
      MakeMemoryRunStore([] { return Clock::time_point{} + std::chrono::hours(24 * 365 * 57); });
  store->CreateRun({});
  store->CreateRun({});
  EXPECT_FALSE(LoadRunView(*store, "nope"));
  try {
    RequireRunView(*store, "nope", "/x/runs.db");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "No run in /x/runs.db has an id starting with 'nope': `kopt runs --store /x/runs.db` "
        "lists them.");
  }
  try {
    LoadRunView(*store, "2");
    FAIL() << "two runs start with 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fits several runs"), std::string::npos) << e.what();
  }
}

TEST(RunReport, EmptyRunsAndReferenceRoots) {
  auto store = MakeMemoryRunStore();
  RunRecord empty = store->CreateRun({});
  RunView v = RequireRunView(*store, empty.id, "mem");
  EXPECT_TRUE(v.tasks.empty());
  EXPECT_FALSE(v.device);
  std::string why;
  std::string html = RunHtml(v, "mem");
  EXPECT_TRUE(WellFormed(html, &why)) << why;
  EXPECT_NE(html.find("no tasks recorded yet"), std::string::npos);
  EXPECT_NE(ShowText(v).find("budget: limits not recorded"), std::string::npos);

  // A task whose root is the reference, with one child measured and one in flight.
  RunRecord run = store->CreateRun({});
  TaskRecord t;
  t.run_id = run.id;
  t.name = "t";
  store->AddTask(t);
  NodeRecord root;
  root.run_id = run.id;
  root.kind = NodeKind::kReference;
  root.name = "reference";
  root.source_hash = "r";
  store->AddNode(root);
  NodeRecord child = root;
  child.id = 1;
  child.parent = 0;
  child.depth = 1;
  child.kind = NodeKind::kCuda;
  child.move = "replay a.cu";
  child.name = "a.cu";
  child.source = "int main() {}\n";
  child.source_hash = "a";
  store->AddNode(child);
  NodeRecord pending = child;
  pending.id = 2;
  pending.source_hash = "b";
  store->AddNode(pending);
  Measured m;
  m.time_ms.median = 0.5;
  m.eager_ms = SampleSummary{};
  m.eager_ms->median = 1.0;
  store->RecordOutcome(MakeOutcomeRecord(run.id, 0, 1, m), {});
  RunView r = RequireRunView(*store, run.id, "mem");
  const TaskView& task = r.tasks[0];
  EXPECT_EQ(task.best, 1);
  EXPECT_EQ(task.verdicts.at("pending"), 2);
  html = RunHtml(r, "mem");
  EXPECT_TRUE(WellFormed(html, &why)) << why;
  EXPECT_NE(html.find("The parent is the task&#39;s reference"), std::string::npos);
  EXPECT_NE(html.find(run_colors::kReference), std::string::npos);
  EXPECT_NE(html.find("not yet evaluated"), std::string::npos);
  EXPECT_NE(html.find("2.00x"), std::string::npos);
}

}  // namespace
}  // namespace kopt
