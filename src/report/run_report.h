// The HTML page of one optimization run (`kopt report RUN`): the run's
// header and budget, then per task the search tree, the best speedup over
// the candidates evaluated, the best candidate's source against its
// parent's, what each diagnosis led to, and every node. Self-contained like
// the other reports (inline CSS and SVG, no scripts, nothing fetched).
//
// Each section carries an id the browser test looks for: run-header,
// budget, summary, and per task i: task-i, tree-i, progress-i, diff-i,
// diagnoses-i, nodes-i.
#pragma once

#include <filesystem>
#include <string>

#include "report/run_view.h"

namespace kopt {

class RunStore;

/// The page; `store_label` says where the run was read (in the closing note).
std::string RunHtml(const RunView& run, const std::string& store_label);

/// Reads the run (id or unique prefix) from `store` and writes its page to
/// `out` atomically. Throws kopt::Error, one sentence, when no run matches
/// or the prefix fits several.
void WriteRunReport(const RunStore& store, const std::string& run_id_or_prefix,
                    const std::string& store_label, const std::filesystem::path& out);

}  // namespace kopt
