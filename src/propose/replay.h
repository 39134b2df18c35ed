// The replay proposer ("replay"): candidates from files and folders, each a
// child of the root, in order. How a user ranks a folder of attempts, and
// how the loop is tested.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "propose/proposer.h"

namespace kopt {

/// `paths` in the order given; a folder contributes its .cu and .py files,
/// recursively, sorted by path (skipping hidden folders and __pycache__).
/// Folder files that are not candidates are skipped, each with a reason in
/// Notes(); a named file that is not a candidate, a missing path, or no
/// candidate at all makes Begin throw kopt::Error. Root() is context.from
/// when given, else nullopt (the reference is the root).
std::unique_ptr<Proposer> MakeReplayProposer(const std::vector<std::filesystem::path>& paths);

}  // namespace kopt
