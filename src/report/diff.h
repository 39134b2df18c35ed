// A line diff (Myers' O(ND) shortest edit script) for showing a candidate's
// source beside its parent's: which lines the move removed and added.
#pragma once

#include <string>
#include <vector>

namespace kopt {

enum class DiffOp { kSame, kRemoved, kAdded };

struct DiffLine {
  DiffOp op = DiffOp::kSame;
  std::string text;  ///< without its line break
  int old_line = 0;  ///< 1-based line in the old text; 0 for an added line
  int new_line = 0;  ///< 1-based line in the new text; 0 for a removed line
};

/// Splits on '\n' and drops a '\r' before it (CRLF sources compare equal to
/// LF ones); a final line break does not start another line, so "a\n" and
/// "a" are both one line.
std::vector<std::string> SplitLines(const std::string& text);

/// Every line of both texts, in order: a shortest edit script (fewest
/// removed plus added lines), with the removed lines of each change before
/// its added ones. When the texts differ in more than `max_edits` lines
/// after their common start and end, the middle is given as all removed then
/// all added (not minimal, but bounded in time and memory).
std::vector<DiffLine> DiffLines(const std::vector<std::string>& old_lines,
                                const std::vector<std::string>& new_lines, int max_edits = 2000);
std::vector<DiffLine> DiffText(const std::string& old_text, const std::string& new_text);

/// A run of the diff around one or more changes, with up to `context`
/// unchanged lines before and after; changes closer than 2 * context lines
/// share a hunk.
struct DiffHunk {
  int old_start = 0;  ///< first old line shown (1-based; 0 when the old text is empty)
  int old_count = 0;
  int new_start = 0;
  int new_count = 0;
  std::vector<DiffLine> lines;
};

/// The hunks of a diff; none when nothing changed.
std::vector<DiffHunk> DiffHunks(const std::vector<DiffLine>& lines, int context = 3);

/// Lines removed and added.
int CountRemoved(const std::vector<DiffLine>& lines);
int CountAdded(const std::vector<DiffLine>& lines);

/// A unified diff ("--- old", "+++ new", "@@ -l,n +l,n @@", then ' ', '-'
/// and '+' lines) for terminals; "" when nothing changed.
std::string UnifiedDiff(const std::vector<DiffLine>& lines, const std::string& old_name,
                        const std::string& new_name, int context = 3);

}  // namespace kopt
