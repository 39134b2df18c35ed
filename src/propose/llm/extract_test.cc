#include "propose/llm/extract.h"

#include <gtest/gtest.h>

namespace kopt {
namespace {

const char* kCu = R"(#include <kopt/abi.h>
__global__ void relu(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
extern "C" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                            kopt_stream stream) {
  long n = kopt_numel(in[0]);
  relu<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>((const float*)in[0].data,
                                                         (float*)out[0].data, n);
  return 0;
}
)";

const char* kPy = R"(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
)";

std::string Fence(const std::string& lang, const std::string& code) {
  return "```" + lang + "\n" + code + "```\n";
}

TEST(Extract, OneTaggedCudaBlockWithProseAround) {
  std::string reply = "Move: vectorized ReLU\n\nThis reads float4.\n\n" + Fence("cuda", kCu) +
                      "\nIt should run at DRAM speed.";
  Extraction x = ExtractCandidate(reply);
  ASSERT_TRUE(x.candidate) << x.failure;
  EXPECT_EQ(x.candidate->kind, CandidateKind::kCuda);
  EXPECT_EQ(x.candidate->source, kCu);
  EXPECT_EQ(x.move, "vectorized ReLU");
  EXPECT_EQ(x.blocks, 1);
}

TEST(Extract, UntaggedBlocksAreJudgedByContent) {
  Extraction a = ExtractCandidate("Here:\n" + Fence("", kCu));
  ASSERT_TRUE(a.candidate);
  EXPECT_EQ(a.candidate->kind, CandidateKind::kCuda);
  Extraction b = ExtractCandidate("Here:\n" + Fence("", kPy));
  ASSERT_TRUE(b.candidate);
  EXPECT_EQ(b.candidate->kind, CandidateKind::kHybrid);
}

TEST(Extract, EveryLanguageTagSpellingIsRead) {
  for (const char* tag : {"cu", "c++", "cpp", "CUDA", "cuda title=\"kernel.cu\"", "kernel.cu"}) {
    Extraction x = ExtractCandidate(Fence(tag, kCu));
    ASSERT_TRUE(x.candidate) << tag;
    EXPECT_EQ(x.candidate->kind, CandidateKind::kCuda) << tag;
  }
  for (const char* tag : {"py", "python3", "Python", "model_new.py"}) {
    Extraction x = ExtractCandidate(Fence(tag, kPy));
    ASSERT_TRUE(x.candidate) << tag;
    EXPECT_EQ(x.candidate->kind, CandidateKind::kHybrid) << tag;
  }
}

TEST(Extract, SeveralDraftsTakeTheLastCompleteOne) {
  std::string draft = std::string(kCu);
  draft.replace(draft.find("256, 256"), 8, "128, 128");
  std::string reply = "First try:\n" + Fence("cuda", draft) + "\nBetter:\n" + Fence("cuda", kCu);
  Extraction x = ExtractCandidate(reply);
  ASSERT_TRUE(x.candidate);
  EXPECT_EQ(x.candidate->source, kCu);
  EXPECT_EQ(x.blocks, 2);
}

TEST(Extract, ABlockNamedFinalWinsOverALaterOne) {
  std::string other = std::string(kCu);
  other.replace(other.find("256, 256"), 8, "512, 512");
  std::string reply = "### Final version\n\n" + Fence("cuda", kCu) +
                      "\nFor comparison, the slower variant:\n\n" + Fence("cuda", other);
  Extraction x = ExtractCandidate(reply);
  ASSERT_TRUE(x.candidate);
  EXPECT_EQ(x.candidate->source, kCu);
  EXPECT_NE(x.chosen.find("final"), std::string::npos) << x.chosen;
}

TEST(Extract, SnippetsThatAreNotCandidatesAreSkipped) {
  // A usage snippet (a call, not a definition) after the candidate.
  std::string reply = Fence("cuda", kCu) + "\nCall it as:\n" +
                      Fence("cpp", "int rc = kopt_forward(in, 1, out, 1, stream);\n") +
                      "\nAnd the shell:\n" + Fence("bash", "nvcc -O3 kernel.cu\n");
  Extraction x = ExtractCandidate(reply);
  ASSERT_TRUE(x.candidate);
  EXPECT_EQ(x.candidate->source, kCu);
}

TEST(Extract, APythonFileUsingTheCudaBlockGetsItAsCudaSource) {
  std::string py = R"(import torch
import torch.nn as nn
import kopt

_k = kopt.load_cuda(CUDA_SOURCE)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        _k([x], [out])
        return out
)";
  std::string reply = "Move: custom kernel\n\nThe kernel:\n" + Fence("cuda", kCu) +
                      "\nThe module:\n" + Fence("python", py);
  Extraction x = ExtractCandidate(reply);
  ASSERT_TRUE(x.candidate) << x.failure;
  EXPECT_EQ(x.candidate->kind, CandidateKind::kHybrid);
  const std::string& s = x.candidate->source;
  std::size_t def = s.find("CUDA_SOURCE = r\"\"\"");
  ASSERT_NE(def, std::string::npos) << s;
  EXPECT_LT(s.find("import kopt"), def);
  EXPECT_LT(def, s.find("kopt.load_cuda(CUDA_SOURCE)"));
  EXPECT_NE(s.find("extern \"C\" int kopt_forward"), std::string::npos);
}

TEST(Extract, APythonFileDefiningItsOwnSourceIsLeftAlone) {
  std::string py = std::string("import torch\nimport kopt\nCUDA_SOURCE = r'''") + kCu +
                   "'''\n_k = kopt.load_cuda(CUDA_SOURCE)\n\nclass ModelNew(torch.nn.Module):\n"
                   "    def forward(self, x):\n        return x\n";
  Extraction x = ExtractCandidate(Fence("cuda", kCu) + Fence("python", py));
  ASSERT_TRUE(x.candidate);
  EXPECT_EQ(x.candidate->source, py);
}

TEST(Extract, ATruncatedReplyHasNoCandidate) {
  std::string cut = std::string(kCu).substr(0, 200);
  Extraction x = ExtractCandidate("Move: tiles\n\n```cuda\n" + cut);
  EXPECT_FALSE(x.candidate);
  EXPECT_TRUE(x.truncated);
  EXPECT_NE(x.failure.find("cut off"), std::string::npos) << x.failure;
}

TEST(Extract, ATruncatedSecondDraftStillLeavesTheFirstComplete) {
  Extraction x = ExtractCandidate(Fence("python", kPy) + "\nAn alternative:\n```cuda\n#include");
  ASSERT_TRUE(x.candidate);
  EXPECT_EQ(x.candidate->kind, CandidateKind::kHybrid);
  EXPECT_TRUE(x.truncated);
}

TEST(Extract, NoCodeAtAllIsAFailureValue) {
  Extraction x = ExtractCandidate("I cannot improve this kernel further; it is at the roofline.");
  EXPECT_FALSE(x.candidate);
  EXPECT_EQ(x.failure, "the reply has no code block");
  EXPECT_EQ(ExtractCandidate("").failure, "the reply was empty");
}

TEST(Extract, CodeThatIsNeitherKindIsAFailureValue) {
  // kopt_forward only in a comment and a string: not a definition.
  std::string fake =
      "// int kopt_forward(const kopt_tensor* in) { return 0; }\n"
      "const char* s = \"kopt_forward(a) {\";\n__global__ void k() {}\n";
  Extraction x = ExtractCandidate(Fence("cuda", fake));
  EXPECT_FALSE(x.candidate);
  EXPECT_NE(x.failure.find("neither kopt_forward"), std::string::npos) << x.failure;
  EXPECT_FALSE(DefinesModelNew("# class ModelNew(nn.Module):\nx = 'class ModelNew:'\n"));
}

TEST(Extract, AReplyThatIsOnlyCodeIsTakenWhole) {
  Extraction x = ExtractCandidate(kPy);
  ASSERT_TRUE(x.candidate);
  EXPECT_EQ(x.candidate->kind, CandidateKind::kHybrid);
}

TEST(Extract, TildeFencesAndLongerFencesNestingBackticks) {
  // A ``` line inside a ```` fence does not close it.
  std::string py = std::string(kPy) + "DOC = \"\"\"\n```\nexample\n```\n\"\"\"\n";
  Extraction x = ExtractCandidate("````python\n" + py + "````\n");
  ASSERT_TRUE(x.candidate);
  EXPECT_EQ(x.candidate->source, py);
  Extraction t = ExtractCandidate("~~~cuda\n" + std::string(kCu) + "~~~\n");
  ASSERT_TRUE(t.candidate);
  EXPECT_EQ(t.candidate->kind, CandidateKind::kCuda);
}

}  // namespace
}  // namespace kopt
