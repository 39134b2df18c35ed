// HTML reports of kopt's JSON results: `kopt bench`, `kopt eval` and
// `kopt profile` write one with --html FILE, and `kopt report RESULTS.json`
// renders a saved result. Each page is self-contained (inline CSS and SVG, no
// scripts), explains its columns, and shows the numbers the JSON holds:
// nothing is computed here that the terminal table does not also show,
// except where a chart needs a ratio of two recorded numbers.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/json.h"

namespace kopt {

enum class ReportKind { kBench, kEval, kProfile };

/// Which command wrote `results`, from its top-level keys; nullopt when it is
/// none of them.
std::optional<ReportKind> DetectReportKind(const Json& results);

std::string BenchHtml(const Json& bench);
std::string EvalHtml(const Json& eval);
std::string ProfileHtml(const Json& profile);

/// The frame every kopt page shares: the style sheet (and `extra_css`), the
/// title, the body (HTML), and a closing note (text) that says where the
/// numbers come from.
std::string HtmlPage(const std::string& title, const std::string& body, const std::string& closing_note,
                     const std::string& extra_css = "");

/// Renders whichever kind `results` is; throws kopt::Error with one sentence
/// when it is not a kopt result.
std::string RenderHtmlReport(const Json& results);

/// RenderHtmlReport, written atomically (a reader never sees half a page).
void WriteHtmlReport(const std::filesystem::path& path, const Json& results);

}  // namespace kopt
