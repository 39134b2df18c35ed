#include "run/static_check.h"

#include <gtest/gtest.h>

namespace kopt {
namespace {

TaskBundle ReluBundle() {
  TaskBundle b;
  b.graph = Json{{"nodes", Json::array({Json{{"op", "aten::clone"}}, Json{{"op", "aten::relu"}}})}};
  return b;
}

Candidate Hybrid(const std::string& source) {
  Candidate c;
  c.kind = CandidateKind::kHybrid;
  c.source = source;
  c.name = "cand.py";
  return c;
}

Contract Forbid() {
  Contract c;
  c.torch_ops = false;
  return c;
}

TEST(StaticCheck, CodeOnlyBlanksCommentsAndStrings) {
  std::string src = "x = 1  # torch.relu(x)\ns = \"torch.relu(\"\nd = '''\ntorch.relu(x)\n'''\ny = torch.relu(x)\n";
  std::string code = PythonCodeOnly(src);
  EXPECT_EQ(code.size(), src.size());
  EXPECT_EQ(std::count(code.begin(), code.end(), '\n'), std::count(src.begin(), src.end(), '\n'));
  EXPECT_EQ(code.find("torch.relu"), code.rfind("torch.relu"));  // only the real call is left
  EXPECT_NE(code.find("y = torch.relu(x)"), std::string::npos);
  std::string escaped = R"(a = "it\"s # not a comment" + b)";
  EXPECT_EQ(PythonCodeOnly(escaped).find("+ b"), escaped.find("+ b"));  // the # was inside the string
}

TEST(StaticCheck, FindsTheReferenceOperatorAndModel) {
  auto r = StaticContractReasons(Hybrid("def forward(self, x):\n    return torch.relu(x)\n"), ReluBundle(), Forbid());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("static check: the source calls torch.relu"), std::string::npos) << r[0];
  EXPECT_NE(StaticContractReasons(Hybrid("y = F.relu(x)"), ReluBundle(), Forbid()).at(0).find("F.relu"),
            std::string::npos);
  auto m = StaticContractReasons(Hybrid("self.ref = mod.Model(*args)\n"), ReluBundle(), Forbid());
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NE(m[0].find("constructs the task's Model"), std::string::npos);
  // ModelNew is the candidate's own class; an operator the reference does
  // not use is left to the dynamic layer; clone is structural.
  EXPECT_TRUE(StaticContractReasons(Hybrid("class ModelNew(nn.Module):\n  m = ModelNew()\n  y = torch.sigmoid(x)\n"
                                           "  z = torch.clone(x)\n  w = torch.relu_like_mine(x)\n"),
                                    ReluBundle(), Forbid())
                  .empty());
  // Mentions in comments and docstrings are not calls.
  EXPECT_TRUE(StaticContractReasons(Hybrid("\"\"\"Faster than torch.relu(x).\"\"\"\n# Model(x) would be slow\n"),
                                    ReluBundle(), Forbid())
                  .empty());
}

TEST(StaticCheck, OnlyWhereTheContractForbidsAndOnlyForHybrids) {
  Candidate c = Hybrid("return torch.relu(x)");
  EXPECT_TRUE(StaticContractReasons(c, ReluBundle(), Contract{}).empty());
  c.kind = CandidateKind::kCuda;
  EXPECT_TRUE(StaticContractReasons(c, ReluBundle(), Forbid()).empty());
}

TEST(StaticCheck, AliasesCoverDecomposedOperators) {
  TaskBundle b;
  b.graph = Json{{"nodes", Json::array({Json{{"op", "aten::mm"}}})}};
  auto r = StaticContractReasons(Hybrid("return torch.matmul(A, B)"), b, Forbid());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("torch.matmul"), std::string::npos);
}

}  // namespace
}  // namespace kopt
