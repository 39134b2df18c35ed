#include <gtest/gtest.h>

#include <random>

#include "report/diff.h"

namespace kopt {
namespace {

// The diff as one string: ' ', '-' or '+' then the text, one line each.
std::string Render(const std::vector<DiffLine>& lines) {
  std::string s;
  for (const auto& l : lines)
    s += (l.op == DiffOp::kSame ? " " : l.op == DiffOp::kRemoved ? "-" : "+") + l.text + "\n";
  return s;
}

std::vector<std::string> Chars(const std::string& s) {
  std::vector<std::string> v;
  for (char c : s) v.push_back(std::string(1, c));
  return v;
}

// Replaying the diff gives back both texts, and the line numbers count up.
void ExpectConsistent(const std::vector<std::string>& a, const std::vector<std::string>& b,
                      const std::vector<DiffLine>& d) {
  std::vector<std::string> old_side, new_side;
  for (const auto& l : d) {
    if (l.op != DiffOp::kAdded) {
      old_side.push_back(l.text);
      EXPECT_EQ(l.old_line, static_cast<int>(old_side.size()));
    } else {
      EXPECT_EQ(l.old_line, 0);
    }
    if (l.op != DiffOp::kRemoved) {
      new_side.push_back(l.text);
      EXPECT_EQ(l.new_line, static_cast<int>(new_side.size()));
    } else {
      EXPECT_EQ(l.new_line, 0);
    }
  }
  EXPECT_EQ(old_side, a);
  EXPECT_EQ(new_side, b);
}

// The length of a longest common subsequence, by dynamic programming: a
// shortest edit script removes and adds exactly the lines outside it.
int Lcs(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::vector<int>> t(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
  return t[a.size()][b.size()];
}

TEST(Diff, SplitsLinesLikeAnEditorShowsThem) {
  EXPECT_TRUE(SplitLines("").empty());
  EXPECT_EQ(SplitLines("a"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(SplitLines("a\n"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(SplitLines("a\n\nb"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(SplitLines("a\r\nb\r\n"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(SplitLines("\n"), (std::vector<std::string>{""}));
}

TEST(Diff, EmptyAndIdenticalTexts) {
  EXPECT_TRUE(DiffText("", "").empty());
  EXPECT_EQ(Render(DiffText("", "a\nb\n")), "+a\n+b\n");
  EXPECT_EQ(Render(DiffText("a\nb\n", "")), "-a\n-b\n");
  auto same = DiffText("x\ny\n", "x\ny");  // a final line break is not a line
  EXPECT_EQ(Render(same), " x\n y\n");
  EXPECT_TRUE(DiffHunks(same).empty());
  EXPECT_EQ(UnifiedDiff(same, "a", "b"), "");
  EXPECT_EQ(Render(DiffText("a\r\nb\r\n", "a\nb\n")), " a\n b\n");  // CRLF against LF
}

TEST(Diff, OneKnobChangeIsTwoLines) {
  const std::string parent =
      "#include <kopt/abi.h>\n"
      "// kopt:knob THREADS 512 64..1024*2 threads per row\n"
      "constexpr int THREADS = 512;\n"
      "__global__ void k() {}\n";
  const std::string child =
      "#include <kopt/abi.h>\n"
      "// kopt:knob THREADS 256 64..1024*2 threads per row\n"
      "constexpr int THREADS = 256;\n"
      "__global__ void k() {}\n";
  auto d = DiffText(parent, child);
  EXPECT_EQ(CountRemoved(d), 2);
  EXPECT_EQ(CountAdded(d), 2);
  // Within a change, removed lines come before added ones.
  EXPECT_EQ(Render(d),
            " #include <kopt/abi.h>\n"
            "-// kopt:knob THREADS 512 64..1024*2 threads per row\n"
            "-constexpr int THREADS = 512;\n"
            "+// kopt:knob THREADS 256 64..1024*2 threads per row\n"
            "+constexpr int THREADS = 256;\n"
            " __global__ void k() {}\n");
  EXPECT_EQ(UnifiedDiff(d, "parent.cu", "best.cu", 1),
            "--- parent.cu\n+++ best.cu\n@@ -1,4 +1,4 @@\n"
            " #include <kopt/abi.h>\n"
            "-// kopt:knob THREADS 512 64..1024*2 threads per row\n"
            "-constexpr int THREADS = 512;\n"
            "+// kopt:knob THREADS 256 64..1024*2 threads per row\n"
            "+constexpr int THREADS = 256;\n"
            " __global__ void k() {}\n");
}

TEST(Diff, ShortestOnTheClassicExample) {
  // Myers' paper: ABCABBA -> CBABAC takes 5 edits (LCS of 4).
  auto a = Chars("ABCABBA"), b = Chars("CBABAC");
  auto d = DiffLines(a, b);
  ExpectConsistent(a, b, d);
  EXPECT_EQ(CountRemoved(d) + CountAdded(d), 5);
}

TEST(Diff, RepeatedLinesAndInsertionsAtTheEnds) {
  for (auto [x, y] : std::vector<std::pair<std::string, std::string>>{{"aaa", "aa"},
                                                                      {"aa", "aaaa"},
                                                                      {"abc", "xabc"},
                                                                      {"abc", "abcx"},
                                                                      {"abab", "baba"},
                                                                      {"a", "b"}}) {
    auto a = Chars(x), b = Chars(y);
    auto d = DiffLines(a, b);
    ExpectConsistent(a, b, d);
    EXPECT_EQ(CountRemoved(d), static_cast<int>(a.size()) - Lcs(a, b)) << x << " -> " << y;
    EXPECT_EQ(CountAdded(d), static_cast<int>(b.size()) - Lcs(a, b)) << x << " -> " << y;
  }
}

TEST(Diff, MinimalOnRandomTexts) {
  std::mt19937 rng(5);
  for (int round = 0; round < 300; ++round) {
    auto make = [&] {
      std::vector<std::string> v(rng() % 14);
      for (auto& s : v) s = std::string(1, static_cast<char>('a' + rng() % 4));
      return v;
    };
    auto a = make(), b = make();
    auto d = DiffLines(a, b);
    ExpectConsistent(a, b, d);
    const int lcs = Lcs(a, b);
    EXPECT_EQ(CountRemoved(d), static_cast<int>(a.size()) - lcs);
    EXPECT_EQ(CountAdded(d), static_cast<int>(b.size()) - lcs);
  }
}

TEST(Diff, TooManyEditsFallsBackToReplacingTheMiddle) {
  std::vector<std::string> a = {"head", "1", "2", "3", "tail"}, b = {"head", "x", "2", "y", "tail"};
  auto d = DiffLines(a, b, /*max_edits=*/1);
  ExpectConsistent(a, b, d);
  EXPECT_EQ(Render(d), " head\n-1\n-2\n-3\n+x\n+2\n+y\n tail\n");
  auto minimal = DiffLines(a, b);
  EXPECT_EQ(CountRemoved(minimal) + CountAdded(minimal), 4);
}

TEST(Diff, HunksKeepContextAndMergeNearbyChanges) {
  std::vector<std::string> a, b;
  for (int i = 1; i <= 30; ++i) a.push_back(std::to_string(i));
  b = a;
  b[4] = "five";  // line 5
  b[8] = "nine";  // line 9: within 2 * 3 of line 5, same hunk
  b[24] = "twenty-five";
  auto d = DiffLines(a, b);
  auto hunks = DiffHunks(d, 3);
  ASSERT_EQ(hunks.size(), 2u);
  EXPECT_EQ(hunks[0].old_start, 2);
  EXPECT_EQ(hunks[0].old_count, 11);  // 2..12
  EXPECT_EQ(hunks[0].new_start, 2);
  EXPECT_EQ(hunks[0].new_count, 11);
  EXPECT_EQ(hunks[1].old_start, 22);
  EXPECT_EQ(hunks[1].old_count, 7);  // 22..28
  // Everything added to an empty text: the hunk starts at line 0 of the old.
  auto all_new = DiffHunks(DiffText("", "a\nb\n"));
  ASSERT_EQ(all_new.size(), 1u);
  EXPECT_EQ(all_new[0].old_start, 0);
  EXPECT_EQ(all_new[0].old_count, 0);
  EXPECT_EQ(all_new[0].new_start, 1);
  EXPECT_EQ(all_new[0].new_count, 2);
  EXPECT_EQ(UnifiedDiff(DiffText("", "a\n"), "a", "b"), "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+a\n");
}

TEST(Diff, LargeTextWithAFewChangesIsQuick) {
  std::vector<std::string> a;
  for (int i = 0; i < 20000; ++i) a.push_back("line " + std::to_string(i));
  auto b = a;
  b[100] = "changed";
  b.insert(b.begin() + 15000, "inserted");
  b.erase(b.begin() + 19000);
  auto d = DiffLines(a, b);
  EXPECT_EQ(CountRemoved(d), 2);
  EXPECT_EQ(CountAdded(d), 2);
  ExpectConsistent(a, b, d);
}

}  // namespace
}  // namespace kopt
