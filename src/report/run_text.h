// The terminal side of the run store: `kopt runs` (one line per run) and
// `kopt show RUN` (one run summarised), as text and as JSON.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "report/run_view.h"
#include "store/run_store.h"

namespace kopt {

/// Newest first as given: id, start, status, tasks, candidates evaluated,
/// the best speedup over eager per task, budget spent. "" for no runs.
std::string RunsText(const std::vector<RunSummary>& runs);
Json RunsJson(const std::vector<RunSummary>& runs);

/// Options, budget, and per task the root, the best candidate with the
/// moves that led to it from the root, its speedups, the counts by verdict,
/// and the `top` fastest measured nodes.
std::string ShowText(const RunView& run, int top = 5);

}  // namespace kopt
