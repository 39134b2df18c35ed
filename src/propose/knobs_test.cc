// Knob lines, constraints and ApplyKnobs.
#include <gtest/gtest.h>

#include <sstream>

#include "core/error.h"
#include "core/json.h"
#include "plan/fusion.h"
#include "propose/knob_expr.h"
#include "propose/knobs.h"
#include "testing/paths.h"

namespace kopt {
namespace {

/// The message of the kopt::Error `f` throws ("" when it throws none).
template <class F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string ParseError(const std::string& source) {
  return ErrorOf([&] { KnobSpace::Parse(source, "k.cu"); });
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// ---------------------------------------------------------------------------
// Constraint expressions

long long Eval(const std::string& text, const KnobConfig& values = {}) {
  auto v = KnobExpr::Parse(text, "t:1").Evaluate(values);
  EXPECT_TRUE(v.has_value()) << text;
  return v.value_or(-999);
}

TEST(KnobExpr, ArithmeticAndPrecedence) {
  EXPECT_EQ(Eval("1 + 2 * 3"), 7);
  EXPECT_EQ(Eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(Eval("17 / 5"), 3);
  EXPECT_EQ(Eval("17 % 5"), 2);
  EXPECT_EQ(Eval("-7 / 2"), -3);  // truncates like C
  EXPECT_EQ(Eval("10 - 3 - 2"), 5);
  EXPECT_EQ(Eval("- -4"), 4);
  EXPECT_EQ(Eval("+4"), 4);
}

TEST(KnobExpr, ComparisonsAndLogic) {
  const KnobConfig v{{"BLOCK", 256}, {"VEC", 4}};
  EXPECT_EQ(Eval("BLOCK*VEC <= 4096", v), 1);
  EXPECT_EQ(Eval("BLOCK*VEC < 1024", v), 0);
  EXPECT_EQ(Eval("BLOCK % 32 == 0 && VEC != 3", v), 1);
  EXPECT_EQ(Eval("BLOCK > 512 || VEC >= 4", v), 1);
  EXPECT_EQ(Eval("!(BLOCK == 256)", v), 0);
  EXPECT_EQ(Eval("!0 + 1", v), 2);
  EXPECT_EQ(Eval("1 < 2 == 1", v), 1);  // relational binds tighter than equality
  EXPECT_EQ(Eval("0 && 1 / 0", v), 0);  // short-circuit
  EXPECT_EQ(Eval("1 || 1 / 0", v), 1);
}

TEST(KnobExpr, NamesAndFailuresToEvaluate) {
  auto e = KnobExpr::Parse("A * B <= C + A", "t:1");
  EXPECT_EQ(e.names(), (std::set<std::string>{"A", "B", "C"}));
  EXPECT_FALSE(e.Evaluate({{"A", 1}, {"B", 2}}).has_value());  // C unbound
  EXPECT_FALSE(KnobExpr::Parse("A / B", "t:1").Evaluate({{"A", 1}, {"B", 0}}).has_value());
  EXPECT_FALSE(KnobExpr::Parse("A % 0", "t:1").Evaluate({{"A", 1}}).has_value());
  EXPECT_FALSE(
      KnobExpr::Parse("A * A", "t:1").Evaluate({{"A", 1LL << 40}}).has_value());  // overflow
}

TEST(KnobExpr, SyntaxErrorsNameTheLineAndColumn) {
  auto msg = [](const std::string& text) {
    return ErrorOf([&] { KnobExpr::Parse(text, "k.cu:7"); });
  };
  EXPECT_NE(msg("A <= ").find("k.cu:7: the constraint `A <= ` ends where"), std::string::npos)
      << msg("A <= ");
  EXPECT_NE(msg("(A + 1").find("never closed"), std::string::npos);
  EXPECT_NE(msg("A = 1").find("`=`, which is not allowed at column 3"), std::string::npos)
      << msg("A = 1");
  EXPECT_NE(msg("A & B").find("`&`, which is not allowed"), std::string::npos);
  EXPECT_NE(msg("A B").find("unexpected `B` at column 3"), std::string::npos);
  EXPECT_NE(msg("4x").find("`4x`"), std::string::npos);
  EXPECT_NE(msg("").find("is empty"), std::string::npos);
  EXPECT_NE(msg("99999999999999999999").find("too large"), std::string::npos);
  EXPECT_NE(msg("import os").find("unexpected `os`"),
            std::string::npos);  // never evaluated as code
}

// ---------------------------------------------------------------------------
// Knob lines

const char kEverySyntax[] = R"(#include <kopt/abi.h>
// kopt:knob BLOCK 256 {64,128,256,512} threads per block
#define BLOCK 256
#define VEC 4  // kopt:knob VEC 4 1..8*2 floats per load
// kopt:knob ROWS 2 1..4+1
constexpr int ROWS = 2;
// kopt:knob BM 64 {128, 64, 32}
// kopt:constraint BLOCK * VEC <= 2048
template <int BM = 64, int BN = 32>  // kopt:knob BN 32 {16,32,64}
__global__ void k() {}
static constexpr long STAGES = 3L;  // kopt:knob STAGES 3 2..5 pipeline depth
constexpr int NEG = -1;  // kopt:knob NEG -1 {-1,0,1}
// kopt:constraint ROWS * BLOCK % 128 == 0 || ROWS == 1
)";

TEST(Knobs, ParsesEverySyntax) {
  KnobSpace s = KnobSpace::Parse(kEverySyntax, "k.cu");
  ASSERT_EQ(s.knobs().size(), 7u);
  const Knob* block = s.Find("BLOCK");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->default_value, 256);
  EXPECT_EQ(block->values, (std::vector<long long>{64, 128, 256, 512}));
  EXPECT_EQ(block->about, "threads per block");
  EXPECT_EQ(block->line, 2);
  EXPECT_EQ(block->value_line, 3);
  EXPECT_EQ(s.Find("VEC")->values, (std::vector<long long>{1, 2, 4, 8}));
  EXPECT_EQ(s.Find("VEC")->value_line, 4);
  EXPECT_EQ(s.Find("VEC")->about, "floats per load");
  EXPECT_EQ(s.Find("ROWS")->values, (std::vector<long long>{1, 2, 3, 4}));
  EXPECT_EQ(s.Find("ROWS")->about, "");
  // A knob line above a constraint line still sets the line below both.
  EXPECT_EQ(s.Find("BM")->values, (std::vector<long long>{32, 64, 128}));  // sorted
  EXPECT_EQ(s.Find("BM")->value_line, 9);
  EXPECT_EQ(s.Find("BN")->value_line, 9);
  EXPECT_EQ(s.Find("STAGES")->values, (std::vector<long long>{2, 3, 4, 5}));
  EXPECT_EQ(s.Find("STAGES")->about, "pipeline depth");
  EXPECT_EQ(s.Find("NEG")->default_value, -1);
  ASSERT_EQ(s.constraints().size(), 2u);
  EXPECT_EQ(s.constraints()[0].line, 8);
  EXPECT_EQ(s.constraints()[0].expr.text(), "BLOCK * VEC <= 2048");
  EXPECT_EQ(s.Size(), 4u * 4 * 4 * 3 * 3 * 4 * 3);
  EXPECT_EQ(s.Describe(s.Defaults()), "BLOCK=256,VEC=4,ROWS=2,BM=64,BN=32,STAGES=3,NEG=-1");
}

TEST(Knobs, RangesWithStepsAndNoKnobs) {
  KnobSpace s = KnobSpace::Parse("#define A 8  // kopt:knob A 8 2..14+3\n", "k.cu");
  EXPECT_EQ(s.Find("A")->values, (std::vector<long long>{2, 5, 8, 11, 14}));
  s = KnobSpace::Parse("#define A 27  // kopt:knob A 27 1..100*3\n", "k.cu");
  EXPECT_EQ(s.Find("A")->values, (std::vector<long long>{1, 3, 9, 27, 81}));
  EXPECT_TRUE(
      KnobSpace::Parse("#define A 4\n// kopt: is only text here, kopt:knob too\n", "k.cu").empty());
  EXPECT_TRUE(
      KnobSpace::Parse("printf(\"kopt:knob\");  /* kopt:knob A 1 {1} */\n", "k.cu").empty());
}

TEST(Knobs, KnobsInsideAPythonFilesCudaString) {
  const std::string py = R"(import kopt
CUDA_SOURCE = r"""
#include <kopt/abi.h>
constexpr int THREADS = 256;  // kopt:knob THREADS 256 {128,256,512}
"""
UNROLL = 2  # kopt:knob UNROLL 2 {1,2,4}
_k = kopt.load_cuda(CUDA_SOURCE)
)";
  KnobSpace s = KnobSpace::Parse(py, "m.py");
  ASSERT_EQ(s.knobs().size(), 2u);
  EXPECT_EQ(s.Find("THREADS")->value_line, 4);
  EXPECT_EQ(s.Find("UNROLL")->value_line, 6);
  const std::string out = s.Apply({{"THREADS", 512}, {"UNROLL", 4}});
  EXPECT_NE(out.find("constexpr int THREADS = 512;  // kopt:knob THREADS 512 {128,256,512}"),
            std::string::npos);
  EXPECT_NE(out.find("UNROLL = 4  # kopt:knob UNROLL 4 {1,2,4}"), std::string::npos);
}

TEST(Knobs, CheckEnumerateAndSample) {
  const std::string src =
      "#define A 2  // kopt:knob A 2 {1,2,4,8}\n"
      "#define B 2  // kopt:knob B 2 {1,2,4,8}\n"
      "// kopt:constraint A * B <= 8\n";
  KnobSpace s = KnobSpace::Parse(src, "k.cu");
  EXPECT_EQ(s.Check({{"A", 8}, {"B", 1}}), "");
  EXPECT_EQ(s.Check({{"A", 8}}), "breaks `A * B <= 8` (line 3)");  // B stays 2
  EXPECT_EQ(s.Check({{"A", 3}}), "A=3 is not one of its values {1,2,4,8}");
  EXPECT_EQ(s.Check({{"C", 3}}), "C is not a knob of k.cu");
  auto all = s.Enumerate();
  EXPECT_EQ(all.size(), 10u);  // (1,1..8) (2,1..4) (4,1..2) (8,1)
  EXPECT_EQ(all.front(), (KnobConfig{{"A", 1}, {"B", 1}}));
  EXPECT_EQ(all.back(), (KnobConfig{{"A", 8}, {"B", 1}}));
  EXPECT_EQ(s.Enumerate(4).size(), 4u);  // visits only the first four
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    auto c = s.Sample(seed);
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(s.Valid(*c));
    EXPECT_EQ(*c, *s.Sample(seed));  // same seed, same draw
  }
}

// ---------------------------------------------------------------------------
// Errors: one sentence naming file:line and what to do

TEST(Knobs, ErrorsNameTheFileAndLine) {
  struct Case {
    std::string source;
    std::string expect;
  };
  const Case cases[] = {
      {"#define A 4\n// kopt:knobs A 4 {4}\n", "k.cu:2: `kopt:knobs` is not a kopt directive"},
      {"// kopt:knob\n#define A 4\n", "k.cu:1: a kopt:knob line needs `NAME DEFAULT VALUES`"},
      {"// kopt:knob 4A 4 {4}\n#define A 4\n", "k.cu:1: a kopt:knob line needs"},
      {"// kopt:knob A four {4}\n#define A 4\n", "k.cu:1: kopt:knob A needs an integer DEFAULT"},
      {"// kopt:knob A 4\n#define A 4\n", "k.cu:1: kopt:knob A needs VALUES"},
      {"// kopt:knob A 4 {4,x}\n#define A 4\n",
       "k.cu:1: kopt:knob A has values `{4,x}` that are neither"},
      {"// kopt:knob A 4 {4,8\n#define A 4\n", "k.cu:1: kopt:knob A opens its value list"},
      {"// kopt:knob A 4 4-8\n#define A 4\n", "k.cu:1: kopt:knob A has values `4-8`"},
      {"// kopt:knob A 4 8..4\n#define A 4\n",
       "k.cu:1: kopt:knob A has the range `8..4` whose low end"},
      {"// kopt:knob A 4 4..8*1\n#define A 4\n", "never grows"},
      {"// kopt:knob A 4 0..8*2\n#define A 4\n", "never grows"},
      {"// kopt:knob A 4 4..8+0\n#define A 4\n", "step 0"},
      {"// kopt:knob A 4 0..100000\n#define A 4\n", "more than 1024 values"},
      {"// kopt:knob A 3 {4,8}\n#define A 3\n",
       "k.cu:1: kopt:knob A has the default 3, which is not one of its "
       "values {4,8}: add it to the values."},
      {"\n// kopt:knob A 8 {4,8}\n#define A 4\n",
       "k.cu:2: kopt:knob A says the default is 8 but line 3 sets 4: make them equal."},
      {"// kopt:knob A 4 {4,8}\n\n#define A 4\n",
       "k.cu:1: kopt:knob A finds no integer value of A on line 2"},
      {"// kopt:knob A 4 {4,8}\n#define B 4\n",
       "finds no integer value of A on line 2: put it on or directly"},
      {"// kopt:knob A 4 {4,8}\nconstexpr float A = 4.0f;\n", "finds no integer value of A"},
      {"// kopt:knob A 4 {4,8}\nconstexpr int A = 2 * 2;\n", "finds no integer value of A"},
      {"// kopt:knob A 4 {4,8}\nint AA = 4;\n", "finds no integer value of A"},
      {"// kopt:knob A 4 {4,8}\nif (A == 4) x = 1;\n", "finds no integer value of A"},
      {"// kopt:knob A 4 {4,8}\nint x; // A = 4\n",
       "finds no integer value of A"},  // comments do not count
      {"#define A 4\n// kopt:knob A 4 {4,8}\n", "k.cu:2: kopt:knob A has no line below it to set"},
      {"// kopt:knob A 4 {4,8}\nint A = 4, B = 1; int C = (A = 4);\n",
       "k.cu:1: line 2 sets A more than once"},
      {"#define A 4  // kopt:knob A 4 {4,8}\nconstexpr int B = 4;  // kopt:knob A 4 {4,8}\n",
       "k.cu:2: A is already a knob (line 1): use one kopt:knob line per name."},
      {"#define A 4  // kopt:knob A 4 {4,8}\n// kopt:constraint A < = 8\n",
       "k.cu:2: the constraint `A < = 8`"},
      {"#define A 4  // kopt:knob A 4 {4,8}\n// kopt:constraint A * B <= 8\n",
       "k.cu:2: the constraint `A * B <= 8` names B, which is not a knob of this file: declare it "
       "with a "
       "kopt:knob line or fix the name."},
      {"#define A 4  // kopt:knob A 4 {4,8}\n// kopt:constraint A > 4\n",
       "k.cu:2: the defaults (A=4) break the constraint `A > 4`: fix the constraint or the "
       "defaults."},
      {"#define A 4  // kopt:knob A 4 {4,8}\n// kopt:constraint 8 / (A - 4)\n",
       "k.cu:2: the constraint `8 / (A - 4)` divides by zero or overflows at the defaults (A=4)"},
  };
  for (const Case& c : cases) {
    const std::string msg = ParseError(c.source);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "source:\n"
                                                     << c.source << "message: " << msg;
    // One sentence: ends with a period, no line breaks.
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_FALSE(msg.empty() || msg.back() != '.') << msg;
  }
}

// ---------------------------------------------------------------------------
// ApplyKnobs

/// Checks that `after` differs from `before` only in the listed (line, old
/// token, new token) edits, each replacing one token in place.
void ExpectOnlyTokensChanged(const std::string& before, const std::string& after,
                             const std::vector<std::tuple<int, std::string, std::string>>& edits) {
  auto a = Lines(before), b = Lines(after);
  ASSERT_EQ(a.size(), b.size());
  std::set<int> expected_lines;
  for (const auto& [line, from, to] : edits) expected_lines.insert(line);
  for (std::size_t i = 0; i < a.size(); ++i) {
    const int line = static_cast<int>(i + 1);
    if (!expected_lines.count(line)) {
      EXPECT_EQ(a[i], b[i]) << "line " << line << " changed";
      continue;
    }
    // Undo the edits on this line, one at a time, and compare.
    std::string x = b[i];
    std::size_t cursor = 0;
    for (const auto& [l, from, to] : edits) {
      if (l != line) continue;
      const std::size_t at = x.find(to, cursor);
      ASSERT_NE(at, std::string::npos);
      x.replace(at, to.size(), from);
      cursor = at + from.size();
    }
    EXPECT_EQ(x, a[i]) << "line " << line;
  }
}

TEST(ApplyKnobs, ChangesOnlyTheValueTokens) {
  const std::string src = kEverySyntax;
  const std::string out = ApplyKnobs(
      src, {{"BLOCK", 512}, {"VEC", 2}, {"BM", 128}, {"BN", 16}, {"STAGES", 5}, {"NEG", 1}},
      "k.cu");
  ExpectOnlyTokensChanged(src, out,
                          {{2, "256", "512"},
                           {3, "256", "512"},
                           {4, "4", "2"},
                           {4, "4", "2"},
                           {7, "64", "128"},
                           {9, "64", "128"},
                           {9, "32", "16"},
                           {9, "32", "16"},
                           {11, "3", "5"},
                           {11, "3", "5"},
                           {12, "-1", "1"},
                           {12, "-1", "1"}});
  EXPECT_NE(out.find("#define BLOCK 512\n"), std::string::npos);
  EXPECT_NE(out.find("#define VEC 2  // kopt:knob VEC 2 1..8*2"), std::string::npos);
  EXPECT_NE(out.find("template <int BM = 128, int BN = 16>  // kopt:knob BN 16 {16,32,64}"),
            std::string::npos);
  EXPECT_NE(out.find("STAGES = 5L;"), std::string::npos);  // the suffix stays
  EXPECT_NE(out.find("NEG = 1;  // kopt:knob NEG 1 {-1,0,1}"), std::string::npos);
  // Knobs left out keep their values.
  EXPECT_NE(out.find("constexpr int ROWS = 2;"), std::string::npos);
}

TEST(ApplyKnobs, DefaultsAreTheSourceAndResultsParseBack) {
  const std::string src = kEverySyntax;
  KnobSpace s = KnobSpace::Parse(src, "k.cu");
  EXPECT_EQ(s.Apply(s.Defaults()), src);
  EXPECT_EQ(s.Apply({}), src);
  const KnobConfig c = s.Complete({{"BLOCK", 64}, {"ROWS", 1}, {"VEC", 8}});
  const std::string out = s.Apply(c);
  KnobSpace t = KnobSpace::Parse(out, "k2.cu");  // a variant is itself a marked kernel
  EXPECT_EQ(t.Defaults(), c);
  EXPECT_EQ(t.Apply(s.Defaults()), src);  // and goes back
}

TEST(ApplyKnobs, KeepsWindowsLineEnds) {
  const std::string src = "#define A 4  // kopt:knob A 4 {4,16}\r\nint x;\r\n";
  EXPECT_EQ(ApplyKnobs(src, {{"A", 16}}), "#define A 16  // kopt:knob A 16 {4,16}\r\nint x;\r\n");
}

TEST(ApplyKnobs, RefusesUnknownKnobsAndForbiddenConfigurations) {
  const std::string src =
      "#define A 2  // kopt:knob A 2 {1,2,4,8}\n"
      "// kopt:constraint A <= 4\n";
  EXPECT_NE(ErrorOf([&] {
              ApplyKnobs(src, {{"B", 1}}, "k.cu");
            }).find("k.cu: the configuration B=1 is not allowed"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              ApplyKnobs(src, {{"A", 8}}, "k.cu");
            }).find("breaks `A <= 4` (line 2)"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] {
              ApplyKnobs(src, {{"A", 3}}, "k.cu");
            }).find("A=3 is not one of its values"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { ApplyKnobs("// kopt:knob A 1 {1}\n", {}, "k.cu"); }).find("k.cu:1:"),
            std::string::npos);
}

// The generated row kernel's register cache on a row of 16384 floats (the
// suite's softmax): a CACHE knob, its step count derived from THREADS and
// VEC, and a constraint that admits every configuration holding the row in
// at most 128 floats per thread.
TEST(KnobSpace, TheRowKernelCachesTheRowAtEveryThreadCountThatHoldsIt) {
  const Json j =
      ReadJsonFile(testing::SourceDir() / "tests" / "data" / "graphs" / "level1_04_softmax.json");
  const auto g = OpGraphFromJson(j);
  ASSERT_TRUE(g);
  const FusionResult r = FuseGraph(*g);
  ASSERT_TRUE(r.kernel);
  const KnobSpace space = KnobSpace::Parse(r.kernel->source, "softmax.cu");
  const KnobConfig d = space.Defaults();
  EXPECT_EQ(d.at("CACHE"), 1);
  EXPECT_EQ(space.Check(d), "");
  auto with = [&](KnobConfig c) { return space.Complete(c); };
  // 128 threads x 4 x 32 steps = 128 floats each: held.
  EXPECT_EQ(space.Check(with({{"THREADS", 128}, {"CACHE", 1}})), "");
  EXPECT_EQ(space.Check(with({{"THREADS", 128}, {"VEC", 2}, {"CACHE", 1}})), "");
  EXPECT_EQ(space.Check(with({{"THREADS", 1024}, {"VEC", 1}, {"CACHE", 1}})), "");
  // 64 threads would need 256 floats each; a warp per row 512.
  EXPECT_NE(space.Check(with({{"THREADS", 64}, {"CACHE", 1}})), "");
  EXPECT_NE(space.Check(with({{"ROW_WARPS", 1}, {"CACHE", 1}})), "");
  EXPECT_EQ(space.Check(with({{"THREADS", 64}, {"CACHE", 0}})), "");
  // Every move of VEC from the defaults stays allowed.
  for (long long vec : {1, 2, 4}) EXPECT_EQ(space.Check(with({{"VEC", vec}})), "") << vec;
  // The step count is no knob: it follows THREADS and VEC in the source.
  EXPECT_EQ(space.Find("CACHE_ITERS"), nullptr);
  EXPECT_NE(space.Apply(with({{"THREADS", 128}})).find("constexpr int THREADS = 128;"),
            std::string::npos);
}

}  // namespace
}  // namespace kopt
