// The SVG pictures of a run's report: the search tree, the best speedup over
// the candidates evaluated, and the budget spent against its limits. Each
// is a self-contained <svg> with inline colours (no scripts, no fonts).
#pragma once

#include <string>

#include "core/budget.h"
#include "report/run_view.h"
#include "report/tree_layout.h"

namespace kopt {

/// The colours that mark what the pictures show: the page uses them, and
/// the browser test looks for them in a screenshot, so they are distinct
/// from every other colour on the page.
namespace run_colors {
inline constexpr const char* kFaster = "#2a9d4b";  ///< measured, faster than eager
inline constexpr const char* kSlower = "#e0a31a";  ///< measured, not faster than eager
inline constexpr const char* kIncorrect = "#d62828";
inline constexpr const char* kBuildFailed = "#7b2cbf";
inline constexpr const char* kCrashed = "#b5541c";
inline constexpr const char* kTimedOut = "#0f8b8d";
inline constexpr const char* kPending = "#ffffff";    ///< drawn with a grey outline
inline constexpr const char* kReference = "#1d3557";  ///< a root without a source of ours
inline constexpr const char* kBestRing = "#f4c20d";
inline constexpr const char* kBestVsEager = "#1f6fd1";    ///< best-so-far line over eager
inline constexpr const char* kBestVsCompile = "#e3771b";  ///< best-so-far line over torch.compile
inline constexpr const char* kDiffAdded = "#d5f5dc";      ///< background of an added line
inline constexpr const char* kDiffRemoved = "#fcd9d9";    ///< background of a removed line
inline constexpr const char* kBudgetBar = "#5b7bd5";
}  // namespace run_colors

/// The fill colour of a node: the reference's own, else by verdict
/// ("measured" splits on whether it beat eager).
const char* NodeColor(const NodeView& node);

/// The search tree: nodes coloured by verdict with their id inside, the
/// measured ones labelled with their speedup over eager, the best ringed and
/// the path to it drawn bold; a <title> on each node gives its move, time,
/// verdict or reason, and diagnoses. Wide trees keep their most telling
/// nodes (see LayoutTree). "" for a task without nodes.
std::string SearchTreeSvg(const TaskView& task, const TreeLayoutOptions& options = {});

/// The best speedup so far over eager and over torch.compile against the
/// candidates evaluated, as steps, with each measured candidate as a dot.
/// "" when no node was measured.
std::string ProgressSvg(const TaskView& task);

/// One bar per budget dimension: spent against the limit (a dimension
/// without a limit shows what was spent).
std::string BudgetSvg(const std::optional<BudgetLimits>& limits, const BudgetSpent& spent);

}  // namespace kopt
