// `kopt show RUN`: one optimization run summarised in the terminal.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/run_store_option.h"
#include "report/run_text.h"
#include "report/run_view.h"

namespace kopt {
namespace {

struct ShowArgs {
  std::string run;
  std::string store;
  int top = 5;
  bool json = false;
};

int RunShow(const ShowArgs& a) {
  OpenedRunStore opened = OpenRunStoreForReading(a.store);
  RunView view = RequireRunView(*opened.store, a.run, opened.label);
  if (a.json)
    fmt::print("{}\n", ToJson(view).dump(2));
  else
    fmt::print("{}", ShowText(view, a.top));
  return 0;
}

}  // namespace

void AddShowCommand(CLI::App* app, int* exit_code) {
  auto args = std::make_shared<ShowArgs>();
  CLI::App* cmd =
      app->add_subcommand("show",
                          "Summarise one optimization run: options, budget, and per task the "
                          "root, the best candidate and how it was reached");
  cmd->add_option("run", args->run, "A run id or unique prefix (see kopt runs)")->required();
  AddStoreOption(cmd, &args->store);
  cmd->add_option("--top", args->top, "How many of the fastest candidates to list per task")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print JSON instead of text (every node, without sources)");
  cmd->callback([args, exit_code] { *exit_code = RunShow(*args); });
}

}  // namespace kopt
