// `kopt runs`: the optimization runs in the run store, newest first.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/run_store_option.h"
#include "report/run_text.h"
#include "core/paths.h"

namespace kopt {
namespace {

struct RunsArgs {
  std::string store;
  int limit = 20;
  bool json = false;
};

int RunRuns(const RunsArgs& a) {
  if (!RunStoreExists(a.store)) {  // nothing recorded yet: not an error, and nothing created
    if (a.json)
      fmt::print("[]\n");
    else
      fmt::print("No runs yet: there is no run store at {}.\n",
                 a.store.empty() ? DefaultRunStorePath().string() : a.store);
    return 0;
  }
  OpenedRunStore opened = OpenRunStoreForReading(a.store);
  std::vector<RunSummary> runs = opened.store->ListRuns(a.limit);
  if (a.json) {
    fmt::print("{}\n", RunsJson(runs).dump(2));
  } else if (runs.empty()) {
    fmt::print("No runs yet in {}.\n", opened.label);
  } else {
    fmt::print("{}", RunsText(runs));
  }
  return 0;
}

}  // namespace

void AddRunsCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<RunsArgs>();
  CLI::App* cmd =
      app->add_subcommand("runs", "List the optimization runs in the run store, newest first");
  AddStoreOption(cmd, &args->store);
  cmd->add_option("--limit", args->limit, "Show at most this many runs (0: all)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print JSON instead of a table");
  cmd->callback([args, exit_code] { *exit_code = RunRuns(*args); });
}

}  // namespace kopt
