// Which CUDA sources of a hybrid candidate can be built ahead: only what
// kopt.load_cuda will receive byte for byte.
#include "build/embedded_sources.h"

#include <gtest/gtest.h>

namespace kopt {
namespace {

TEST(EmbeddedSources, AModuleLiteralHandedToLoadCudaIsFoundExactly) {
  const std::string py =
      "import kopt as _kopt_lib\n"
      "CUDA_SOURCE = r\"\"\"\n#include <kopt/abi.h>\n__global__ void k() {}\n\"\"\"\n\n"
      "_kopt_tail = _kopt_lib.load_cuda(CUDA_SOURCE)\n"
      "_T = r'''\n__global__ void t() {}\n'''  # a transpose\n"
      "def f():\n    m = kopt.load_cuda(_T, name=\"kopt_transpose\")\n"
      "    again = kopt.load_cuda(CUDA_SOURCE)\n";
  const auto found = EmbeddedCudaSources(py);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].variable, "CUDA_SOURCE");
  EXPECT_EQ(found[0].name, "");
  EXPECT_EQ(found[0].source, "\n#include <kopt/abi.h>\n__global__ void k() {}\n");
  EXPECT_EQ(found[1].variable, "_T");
  EXPECT_EQ(found[1].name, "kopt_transpose");
  EXPECT_EQ(found[1].source, "\n__global__ void t() {}\n");
}

TEST(EmbeddedSources, CarriageReturnsReadAsPythonReadsThem) {
  const auto found = EmbeddedCudaSources("S = r\"\"\"\r\na\r\nb\"\"\"\r\nm = load_cuda(S)\r\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].source, "\na\nb");
}

TEST(EmbeddedSources, SourcesEditedOrBuiltWithFlagsAreLeftOut) {
  // Specialised at run time: the literal is not what gets built.
  EXPECT_TRUE(EmbeddedCudaSources("_G = r\"\"\"\n#define KOPT_BIAS 0\n\"\"\"\n"
                                  "def g(b):\n    src = _G.replace('0', str(b))\n"
                                  "    return kopt.load_cuda(src, name=\"kopt_gemm\")\n")
                  .empty());
  // Extra nvcc flags change the build.
  EXPECT_TRUE(
      EmbeddedCudaSources("S = r\"\"\"x\"\"\"\nm = kopt.load_cuda(S, extra_cflags=['-DX'])\n")
          .empty());
  // Bound twice, bound with an edit on the same line, annotated, augmented,
  // or declared global in a function: the literal may not be what is built.
  EXPECT_TRUE(EmbeddedCudaSources("S = r\"\"\"x\"\"\"\nS = S + 'y'\nm = load_cuda(S)\n").empty());
  EXPECT_TRUE(
      EmbeddedCudaSources("S = r\"\"\"x\"\"\".replace('x', 'y')\nm = load_cuda(S)\n").empty());
  EXPECT_TRUE(EmbeddedCudaSources("S = r\"\"\"x\"\"\" + T\nm = load_cuda(S)\n").empty());
  EXPECT_TRUE(EmbeddedCudaSources("S: str = r\"\"\"x\"\"\"\nm = load_cuda(S)\n").empty());
  EXPECT_TRUE(EmbeddedCudaSources("S = r\"\"\"x\"\"\"\nS += 'y'\nm = load_cuda(S)\n").empty());
  EXPECT_TRUE(EmbeddedCudaSources("S = r\"\"\"x\"\"\"\ndef f():\n    global S\n    S = 'y'\n"
                                  "m = load_cuda(S)\n")
                  .empty());
  // Not a raw literal (escapes would be processed), or not bound at all.
  EXPECT_TRUE(EmbeddedCudaSources("S = \"\"\"x\\n\"\"\"\nm = load_cuda(S)\n").empty());
  EXPECT_TRUE(EmbeddedCudaSources("m = load_cuda(S)\n").empty());
  // A comparison is not a binding.
  const auto found = EmbeddedCudaSources("S = r\"\"\"x\"\"\"\nS == 1\nm = load_cuda(S)\n");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].source, "x");
}

TEST(EmbeddedSources, OneSourceBoundToTwoNamesIsBuiltOnce) {
  const auto found = EmbeddedCudaSources(
      "A = r\"\"\"same\"\"\"\nB = r\"\"\"same\"\"\"\nx = load_cuda(A)\ny = load_cuda(B)\n");
  EXPECT_EQ(found.size(), 1u);
}

}  // namespace
}  // namespace kopt
