// kopt: verifies, times and profiles GPU kernels. main() only dispatches.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <string>

#include "cli/commands.h"
#include "cli/context.h"
#include "core/error.h"

namespace {

// A command-line mistake as one sentence: CLI11's message on one line, and
// where to read the options (the subcommand's help when one was named).
std::string ParseErrorSentence(const CLI::App& app, const CLI::ParseError& e) {
  std::string what = e.what();
  for (char& c : what)
    if (c == '\n') c = ' ';
  while (!what.empty() && (what.back() == ' ' || what.back() == '.')) what.pop_back();
  if (what.size() > 1 && std::isupper(static_cast<unsigned char>(what[0])) &&
      !std::isupper(static_cast<unsigned char>(what[1])))  // not an acronym
    what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
  std::string help = "kopt --help";
  for (const CLI::App* sub : app.get_subcommands()) help = "kopt " + sub->get_name() + " --help";
  return fmt::format("{}: see `{}`.", what, help);
}

}  // namespace

int main(int argc, char** argv) {
  kopt::SetCommandLine(argc, argv);
  CLI::App app{
      "kopt verifies candidate GPU kernels against a PyTorch reference, times them against eager\n"
      "PyTorch, torch.compile and the reference algorithm's roofline floor, and profiles them.\n"
      "Without a GPU: eval/capture --device cpu, profile --replay, report.",
      "kopt"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kopt 0.1.0");
  int exit_code = 0;
  kopt::AddOptimizeCommand(&app, &exit_code);
  kopt::AddCaptureCommand(&app, &exit_code);
  kopt::AddEvalCommand(&app, &exit_code);
  kopt::AddBenchCommand(&app, &exit_code);
  kopt::AddProfileCommand(&app, &exit_code);
  kopt::AddReportCommand(&app, &exit_code);
  kopt::AddExportCommand(&app, &exit_code);
  kopt::AddBuildCommand(&app, &exit_code);
  kopt::AddRunsCommand(&app, &exit_code);
  kopt::AddShowCommand(&app, &exit_code);
  kopt::AddMemoryCommand(&app, &exit_code);
  app.footer(
      "\nExamples:\n"
      "  kopt bench tasks/                                   run the suite: baselines, floors, "
      "solutions\n"
      "  kopt capture tasks/level1/01_relu.py                what kopt learns about a task\n"
      "  kopt eval tasks/level1/01_relu.py my_relu.cu        verify and time one candidate\n"
      "  kopt report results.json                            an HTML page with charts of a saved "
      "result\n"
      "  kopt build my_kernel.cu                             compile with kopt's nvcc recipe; "
      "print the .so\n");
  // A first word that is no command: say which commands there are.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known |= sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      fmt::print(stderr, "kopt: '{}' is not a kopt command: use one of {} (see `kopt --help`).\n",
                 argv[1], names);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are successes; every real parse error is one
    // sentence and exit status 2, like any other mistake in the input.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    fmt::print(stderr, "kopt: {}\n", ParseErrorSentence(app, e));
    return 2;
  } catch (const kopt::Error& e) {
    fmt::print(stderr, "kopt: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kopt: internal error: {}. Please report it with the command you ran.\n",
               e.what());
    return 3;
  }
  return exit_code;
}
