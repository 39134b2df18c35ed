// `kopt runs`, `kopt show RUN` and `kopt report RUN` end to end on a SQLite
// run store holding the fixture run.
#include <gtest/gtest.h>

#include "core/json.h"
#include "core/subprocess.h"
#include "testing/paths.h"
#include "testing/run_fixture.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

ProcessResult Kopt(std::vector<std::string> args,
                   const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), KOPT_BINARY);
  ProcessOptions o;
  o.timeout_s = 120;
  o.env["KOPT_CACHE"] = testing::ScratchDir("run-cli-cache").string();
  o.env["KOPT_RUNS"] = "";
  for (const auto& [k, v] : env) o.env[k] = v;
  return RunProcess(args, o);
}

// One sentence: a capital, one full stop at the end, one line.
void ExpectOneSentence(const std::string& err) {
  ASSERT_FALSE(err.empty());
  const std::string line = err.substr(0, err.find('\n'));
  EXPECT_EQ(err, line + "\n") << "more than one line: " << err;
  EXPECT_EQ(line.rfind("kopt: ", 0), 0u) << line;
  EXPECT_EQ(line.back(), '.') << line;
}

class RunCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(testing::ScratchDir("run-cli"));
    db_ = new fs::path(*dir_ / "runs.db");
    id_ = new std::string(testing::MakeFixtureSqlite(*db_).run_id);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete db_;
    delete id_;
  }
  static fs::path* dir_;
  static fs::path* db_;
  static std::string* id_;
};
fs::path* RunCli::dir_ = nullptr;
fs::path* RunCli::db_ = nullptr;
std::string* RunCli::id_ = nullptr;

TEST_F(RunCli, RunsListsTheRun) {
  ProcessResult r = Kopt({"runs", "--store", db_->string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(*id_), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("budget_spent"), std::string::npos);
  EXPECT_NE(r.out.find("10_sum_dim"), std::string::npos);
  ProcessResult j = Kopt({"runs", "--json", "--limit", "1"}, {{"KOPT_RUNS", db_->string()}});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  Json runs = Json::parse(j.out);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["id"], *id_);
  EXPECT_EQ(runs[0]["tasks"].size(), 2u);
}

// A real run of the loop's profile stage on the H200 (tests/data/runs/README.md):
// kopt show lists each profiled node with its first finding.
TEST(RunCliRecorded, ShowListsTheProfiledNodesOfARealRun) {
  const fs::path db = testing::ScratchDir("run-cli-profiled") / "runs.db";
  fs::copy_file(testing::SourceDir() / "tests/data/runs/h200_profile_2tasks.db", db,
                fs::copy_options::overwrite_existing);
  ProcessResult r = Kopt({"show", "20261203-1519", "--store", db.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("profile best, profile_limit 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("profiled #4: 2 finding(s); first occupancy_limiter (warning"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("profiled #3: 1 finding(s); first dram_at_roof (info"), std::string::npos)
      << r.out;
}

TEST_F(RunCli, RunsWithoutAStoreSaysSoAndCreatesNothing) {
  const fs::path cache = testing::ScratchDir("run-cli-empty");
  ProcessResult r = Kopt({"runs"}, {{"KOPT_CACHE", cache.string()}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("No runs yet"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(cache / "runs.db"));
  ProcessResult j = Kopt({"runs", "--json"}, {{"KOPT_CACHE", cache.string()}});
  EXPECT_EQ(j.out, "[]\n");
}

TEST_F(RunCli, ShowSummarisesTheRun) {
  ProcessResult r = Kopt({"show", id_->substr(0, 16), "--store", db_->string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("run " + *id_), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("options: proposer tune"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("from the root: #0, then #"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fastest 5 of"), std::string::npos) << r.out;
  ProcessResult j = Kopt({"show", *id_, "--store", db_->string(), "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  Json v = Json::parse(j.out);
  EXPECT_EQ(v["id"], *id_);
  EXPECT_EQ(v["tasks"][0]["best"]["moves"][0], "THREADS 512 -> 256");
}

TEST_F(RunCli, ReportWritesThePage) {
  const fs::path out = *dir_ / "page.html";
  ProcessResult r = Kopt({"report", *id_, "--store", db_->string(), "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + out.string() + "\n");
  const std::string html = ReadTextFile(out);
  EXPECT_NE(html.find("id=\"tree-1\""), std::string::npos);
  // Without -o: run-<id>.html in the current directory.
  ProcessOptions o;
  o.cwd = *dir_;
  ProcessResult d = RunProcess({KOPT_BINARY, "report", *id_, "--store", db_->string()}, o);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(fs::exists(*dir_ / ("run-" + *id_ + ".html")));
}

TEST_F(RunCli, ReportStillRendersAResultsFile) {
  const fs::path results = *dir_ / "bench.json";
  fs::copy_file(testing::SourceDir() / "tests/data/report/bench_h200_s3.json", results,
                fs::copy_options::overwrite_existing);
  ProcessResult r = Kopt({"report", results.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(*dir_ / "bench.html"));
  ProcessResult missing = Kopt({"report", (*dir_ / "missing.json").string()});
  EXPECT_EQ(missing.exit_code, 2);
}

TEST_F(RunCli, BadRunsAreOneSentenceAndExitTwo) {
  ProcessResult none = Kopt({"report", "nosuchrun", "--store", db_->string()});
  EXPECT_EQ(none.exit_code, 2) << none.out << none.err;
  ExpectOneSentence(none.err);
  EXPECT_NE(none.err.find("No run in " + db_->string() + " has an id starting with 'nosuchrun'"),
            std::string::npos)
      << none.err;
  ProcessResult show = Kopt({"show", "nosuchrun", "--store", db_->string()});
  EXPECT_EQ(show.exit_code, 2);
  ExpectOneSentence(show.err);

  // Two runs that start alike: the prefix they share is ambiguous.
  const fs::path two = testing::ScratchDir("run-cli-two") / "runs.db";
  std::string a = testing::MakeFixtureSqlite(two).run_id;
  std::string b = testing::MakeFixtureSqlite(two).run_id;
  size_t common = 0;
  while (common < a.size() && a[common] == b[common]) ++common;
  ASSERT_GE(common, 13u);  // same fixture clock: the same minute
  ProcessResult ambiguous = Kopt({"report", a.substr(0, common), "--store", two.string()});
  EXPECT_EQ(ambiguous.exit_code, 2) << ambiguous.err;
  ExpectOneSentence(ambiguous.err);
  EXPECT_NE(ambiguous.err.find("fits several runs"), std::string::npos) << ambiguous.err;

  ProcessResult no_store = Kopt({"show", "x", "--store", (*dir_ / "absent.db").string()});
  EXPECT_EQ(no_store.exit_code, 2);
  ExpectOneSentence(no_store.err);
  EXPECT_NE(no_store.err.find("There is no run store at"), std::string::npos) << no_store.err;
  EXPECT_FALSE(fs::exists(*dir_ / "absent.db"));
}

}  // namespace
}  // namespace kopt
