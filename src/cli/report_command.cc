// `kopt report RUN|RESULTS.json`: an HTML page of an optimization run from
// the run store, or of a saved bench, eval or profile result.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/run_store_option.h"
#include "core/error.h"
#include "core/json.h"
#include "report/html_report.h"
#include "report/run_report.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::string what;      ///< a run id (or prefix), or a results file
  std::string html_out;  ///< empty: run-<id>.html, or the results file as .html
  std::string store;     ///< empty: DefaultRunStorePath()
};

// A results file when it exists or looks like a path; else a run id.
bool LooksLikeFile(const std::string& what) {
  return fs::exists(what) || what.find('/') != std::string::npos ||
         fs::path(what).extension() == ".json";
}

int ReportResults(const ReportArgs& a) {
  Json j = ReadJsonFile(a.what);
  if (!DetectReportKind(j))
    throw Error(
        a.what +
        " is not a kopt result: pass a file written by kopt bench, eval or profile with --json.");
  fs::path out = a.html_out;
  if (out.empty()) out = fs::path(a.what).replace_extension(".html");
  WriteHtmlReport(out, j);
  fmt::print("wrote {}\n", out.string());
  return 0;
}

int ReportRun(const ReportArgs& a) {
  OpenedRunStore opened = OpenRunStoreForReading(a.store);
  RunView view = RequireRunView(*opened.store, a.what, opened.label);
  fs::path out =
      a.html_out.empty() ? fs::path("run-" + view.run.id + ".html") : fs::path(a.html_out);
  WriteTextFileAtomic(out, RunHtml(view, opened.label));
  fmt::print("wrote {}\n", out.string());
  return 0;
}

}  // namespace

void AddReportCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app->add_subcommand("report",
                                      "Render an optimization run (its id, or the start of it) or "
                                      "a saved result (bench, eval or profile --json) "
                                      "as an HTML page with charts");
  cmd->add_option("what", args->what,
                  "A run id or unique prefix (see kopt runs), or a JSON file kopt wrote")
      ->required();
  cmd->add_option(
      "--html,-o", args->html_out,
      "Where to write the page (default: run-<id>.html here, or the results file as .html)");
  AddStoreOption(cmd, &args->store);
  cmd->callback([args, exit_code] {
    *exit_code = LooksLikeFile(args->what) ? ReportResults(*args) : ReportRun(*args);
  });
}

}  // namespace kopt
