// Reading task files and candidate files into Task / Candidate values.
#pragma once

#include <filesystem>
#include <vector>

#include "core/task.h"

namespace kopt {

/// Loads a KernelBench-format task (.py with Model, get_inputs,
/// get_init_inputs). Throws kopt::Error, one sentence, when the path is not a
/// task; deeper problems (it does not import) surface at capture.
Task LoadTask(const std::filesystem::path& path);

/// True when the file looks like a KernelBench task (cheap text check).
bool LooksLikeTask(const std::filesystem::path& path);

/// Loads a candidate: `.cu` (kopt ABI) or `.py` (a ModelNew file). Throws
/// kopt::Error when the file is neither.
Candidate LoadCandidate(const std::filesystem::path& path);

/// Every task file under `dir` (recursively, skipping `solutions/`), sorted;
/// each named by its path relative to `dir` without the extension.
std::vector<Task> FindTasks(const std::filesystem::path& dir);

/// Solutions shipped for a task: `<task dir>/solutions/<stem>.cu|.py` and
/// `<stem>*.cu|.py` variants, sorted.
std::vector<Candidate> FindSolutions(const Task& task);

}  // namespace kopt
