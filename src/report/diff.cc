#include "report/diff.h"

#include <algorithm>

#include <fmt/format.h>

namespace kopt {
namespace {

enum class Step { kSame, kRemove, kAdd };

// Myers' greedy forward search over a[0..n) and b[0..m) (both non-empty
// after the common ends are trimmed); the steps of a shortest edit script in
// order, or nothing when it takes more than max_edits edits.
bool MyersSteps(const std::vector<std::string>& a, size_t a0, size_t n,
                const std::vector<std::string>& b, size_t b0, size_t m, int max_edits,
                std::vector<Step>* steps) {
  const int N = static_cast<int>(n), M = static_cast<int>(m);
  const int max_d = std::min(N + M, max_edits);
  // trace[d][k + d] = the furthest x on diagonal k after d edits.
  std::vector<std::vector<int>> trace;
  std::vector<int> prev;  // trace[d - 1], indexed k + d - 1
  int found = -1;
  for (int d = 0; d <= max_d && found < 0; ++d) {
    std::vector<int> v(2 * d + 1);
    for (int k = -d; k <= d; k += 2) {
      int x;
      if (d == 0) {
        x = 0;
      } else if (k == -d || (k != d && prev[k - 1 + d - 1] < prev[k + 1 + d - 1])) {
        x = prev[k + 1 + d - 1];  // down: b[y] added
      } else {
        x = prev[k - 1 + d - 1] + 1;  // right: a[x] removed
      }
      int y = x - k;
      while (x < N && y < M && a[a0 + x] == b[b0 + y]) {
        ++x;
        ++y;
      }
      v[k + d] = x;
      if (x >= N && y >= M) found = d;
    }
    trace.push_back(v);
    prev = std::move(v);
  }
  if (found < 0) return false;
  // Walk back from (N, M).
  std::vector<Step> rev;
  int x = N, y = M;
  for (int d = found; d > 0; --d) {
    const std::vector<int>& p = trace[d - 1];
    const int k = x - y;
    const bool down = k == -d || (k != d && p[k - 1 + d - 1] < p[k + 1 + d - 1]);
    const int pk = down ? k + 1 : k - 1;
    const int px = p[pk + d - 1], py = px - pk;
    const int sx = down ? px : px + 1;  // where the snake after the edit starts
    while (x > sx) {
      rev.push_back(Step::kSame);
      --x;
      --y;
    }
    rev.push_back(down ? Step::kAdd : Step::kRemove);
    x = px;
    y = py;
  }
  while (x > 0) {
    rev.push_back(Step::kSame);
    --x;
    --y;
  }
  steps->assign(rev.rbegin(), rev.rend());
  return true;
}

}  // namespace

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

std::vector<DiffLine> DiffLines(const std::vector<std::string>& a,
                                const std::vector<std::string>& b, int max_edits) {
  // The common start and end cost nothing to find and shrink the search.
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  const size_t n = a.size() - pre - suf, m = b.size() - pre - suf;

  std::vector<Step> steps(pre, Step::kSame);
  std::vector<Step> middle;
  if (n == 0 || m == 0 || !MyersSteps(a, pre, n, b, pre, m, max_edits, &middle)) {
    middle.assign(n, Step::kRemove);
    middle.insert(middle.end(), m, Step::kAdd);
  }
  // Within each change, removed lines first, then added ones.
  for (size_t i = 0; i < middle.size();) {
    if (middle[i] == Step::kSame) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < middle.size() && middle[j] != Step::kSame) ++j;
    std::stable_partition(middle.begin() + i, middle.begin() + j,
                          [](Step s) { return s == Step::kRemove; });
    i = j;
  }
  steps.insert(steps.end(), middle.begin(), middle.end());
  steps.insert(steps.end(), suf, Step::kSame);

  std::vector<DiffLine> out;
  out.reserve(steps.size());
  int i = 0, j = 0;
  for (Step s : steps) {
    switch (s) {
      case Step::kSame:
        out.push_back({DiffOp::kSame, a[i], i + 1, j + 1});
        ++i;
        ++j;
        break;
      case Step::kRemove:
        out.push_back({DiffOp::kRemoved, a[i], i + 1, 0});
        ++i;
        break;
      case Step::kAdd:
        out.push_back({DiffOp::kAdded, b[j], 0, j + 1});
        ++j;
        break;
    }
  }
  return out;
}

std::vector<DiffLine> DiffText(const std::string& old_text, const std::string& new_text) {
  return DiffLines(SplitLines(old_text), SplitLines(new_text));
}

std::vector<DiffHunk> DiffHunks(const std::vector<DiffLine>& lines, int context) {
  context = std::max(context, 0);
  std::vector<DiffHunk> hunks;
  const int total = static_cast<int>(lines.size());
  int i = 0;
  while (i < total) {
    while (i < total && lines[i].op == DiffOp::kSame) ++i;
    if (i == total) break;
    // [begin, end) covers the changes of this hunk and their context.
    int begin = std::max(0, i - context);
    int end = i;
    while (true) {
      while (end < total && lines[end].op != DiffOp::kSame) ++end;
      int next = end;
      while (next < total && lines[next].op == DiffOp::kSame) ++next;
      if (next < total && next - end <= 2 * context) {
        end = next;
        continue;
      }
      end = std::min(total, end + context);
      break;
    }
    DiffHunk h;
    h.lines.assign(lines.begin() + begin, lines.begin() + end);
    // Where the hunk starts in each text: the first line it shows there, or
    // (none shown) the line before it, as `diff -u` writes it.
    int old_before = 0, new_before = 0;
    for (int k = 0; k < begin; ++k) {
      if (lines[k].op != DiffOp::kAdded) old_before = lines[k].old_line;
      if (lines[k].op != DiffOp::kRemoved) new_before = lines[k].new_line;
    }
    for (const auto& l : h.lines) {
      if (l.op != DiffOp::kAdded) ++h.old_count;
      if (l.op != DiffOp::kRemoved) ++h.new_count;
    }
    h.old_start = h.old_count > 0 ? old_before + 1 : old_before;
    h.new_start = h.new_count > 0 ? new_before + 1 : new_before;
    hunks.push_back(std::move(h));
    i = end;
  }
  return hunks;
}

int CountRemoved(const std::vector<DiffLine>& lines) {
  return static_cast<int>(std::count_if(
      lines.begin(), lines.end(), [](const DiffLine& l) { return l.op == DiffOp::kRemoved; }));
}

int CountAdded(const std::vector<DiffLine>& lines) {
  return static_cast<int>(std::count_if(lines.begin(), lines.end(),
                                        [](const DiffLine& l) { return l.op == DiffOp::kAdded; }));
}

std::string UnifiedDiff(const std::vector<DiffLine>& lines, const std::string& old_name,
                        const std::string& new_name, int context) {
  std::vector<DiffHunk> hunks = DiffHunks(lines, context);
  if (hunks.empty()) return "";
  std::string s = fmt::format("--- {}\n+++ {}\n", old_name, new_name);
  for (const auto& h : hunks) {
    s += fmt::format("@@ -{},{} +{},{} @@\n", h.old_start, h.old_count, h.new_start, h.new_count);
    for (const auto& l : h.lines) {
      s += l.op == DiffOp::kSame ? ' ' : l.op == DiffOp::kRemoved ? '-' : '+';
      s += l.text + "\n";
    }
  }
  return s;
}

}  // namespace kopt
