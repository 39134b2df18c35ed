// Reading task files and candidate files into Task / Candidate values.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/task.h"

namespace kopt {

/// Loads a KernelBench-format task (.py with Model, get_inputs,
/// get_init_inputs). Throws kopt::Error, one sentence, when the path is not a
/// task; deeper problems (it does not import) surface at capture. With
/// `python`, that interpreter parses the file (its `ast` module, no torch
/// needed): a syntax error is reported with its line, and the top-level
/// definitions come from the syntax tree instead of the text check.
Task LoadTask(const std::filesystem::path& path, const std::string& python = "");

/// True when the file looks like a KernelBench task (cheap text check).
bool LooksLikeTask(const std::filesystem::path& path);

/// Loads a candidate: `.cu` (kopt ABI) or `.py` (a ModelNew file). Throws
/// kopt::Error when the file is neither, or a `.cu` names kopt_forward
/// nowhere outside comments and string literals (whether the built object
/// exports it is checked after the build: build/abi_exports.h).
Candidate LoadCandidate(const std::filesystem::path& path);

/// C or C++ source with comments and string and character literals (raw
/// strings too) replaced by spaces, newlines kept.
std::string BlankCommentsAndStrings(const std::string& source);

/// Every task file under `dir` (recursively, skipping `solutions/`), sorted;
/// each named by its path relative to `dir` without the extension.
std::vector<Task> FindTasks(const std::filesystem::path& dir);

/// Solutions shipped for a task: `<task dir>/solutions/<stem>.cu|.py` and
/// `<stem>*.cu|.py` variants, sorted.
std::vector<Candidate> FindSolutions(const Task& task);

}  // namespace kopt
