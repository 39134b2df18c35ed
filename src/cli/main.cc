// kopt: makes GPU kernels fast and proves it. main() only dispatches.
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kopt makes GPU kernels fast and proves it: it verifies candidate kernels against a PyTorch reference,\n"
      "times them honestly against eager PyTorch and torch.compile, and explains every number.",
      "kopt"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kopt 0.1.0");
  int exit_code = 0;
  kopt::AddCaptureCommand(&app, &exit_code);
  kopt::AddEvalCommand(&app, &exit_code);
  kopt::AddBenchCommand(&app, &exit_code);
  kopt::AddProfileCommand(&app, &exit_code);
  kopt::AddReportCommand(&app, &exit_code);
  kopt::AddRunsCommand(&app, &exit_code);
  kopt::AddShowCommand(&app, &exit_code);
  app.footer(
      "\nExamples:\n"
      "  kopt bench tasks/                                   run the suite: baselines, floors, solutions\n"
      "  kopt capture tasks/level1/01_relu.py                what kopt learns about a task\n"
      "  kopt eval tasks/level1/01_relu.py my_relu.cu        verify and time one candidate\n"
      "  kopt report results.json                            an HTML page with charts of a saved result\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const kopt::Error& e) {
    fmt::print(stderr, "kopt: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kopt: internal error: {}. Please report it with the command you ran.\n", e.what());
    return 3;
  }
  return exit_code;
}
