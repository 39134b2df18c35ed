// `kopt report RESULTS.json`: an HTML report of a saved bench, eval or profile result.
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/json.h"
#include "report/html_report.h"

namespace kopt {
namespace {

struct ReportArgs {
  std::string results;
  std::string html_out;  ///< empty: next to the results, as .html
};

int RunReport(const ReportArgs& a) {
  Json j = ReadJsonFile(a.results);
  if (!DetectReportKind(j))
    throw Error(a.results + " is not a kopt result: pass a file written by kopt bench, eval or profile with --json.");
  std::filesystem::path out = a.html_out;
  if (out.empty()) out = std::filesystem::path(a.results).replace_extension(".html");
  WriteHtmlReport(out, j);
  fmt::print("wrote {}\n", out.string());
  return 0;
}

}  // namespace

void AddReportCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app->add_subcommand(
      "report", "Render a saved kopt result (bench, eval or profile --json) as an HTML page with charts");
  cmd->add_option("results", args->results, "The JSON file kopt wrote")->required();
  cmd->add_option("--html,-o", args->html_out, "Where to write the page (default: the results file as .html)");
  cmd->callback([args, exit_code] { *exit_code = RunReport(*args); });
}

}  // namespace kopt
