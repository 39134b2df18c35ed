// The kopt subcommands; each registers itself on the app.
#pragma once

#include <CLI/CLI.hpp>

namespace kopt {

/// Each returns the process exit code through `*exit_code` when it runs.
void AddCaptureCommand(CLI::App* app, int* exit_code);
void AddEvalCommand(CLI::App* app, int* exit_code);
void AddBenchCommand(CLI::App* app, int* exit_code);
void AddProfileCommand(CLI::App* app, int* exit_code);
void AddReportCommand(CLI::App* app, int* exit_code);
void AddOptimizeCommand(CLI::App* app, int* exit_code);
void AddExportCommand(CLI::App* app, int* exit_code);
void AddBuildCommand(CLI::App* app, int* exit_code);
void AddRunsCommand(CLI::App* app, int* exit_code);
void AddShowCommand(CLI::App* app, int* exit_code);
void AddMemoryCommand(CLI::App* app, int* exit_code);

}  // namespace kopt
