// The candidate ABI: the header compiles as C and C++, its layout is the one
// the Python loader mirrors, and every shipped solution compiles with nvcc.
#include <cstddef>
#include <regex>

#include <gtest/gtest.h>

#include "build/builder.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "kopt/abi.h"
#include "testing/paths.h"

namespace kopt {
namespace {
namespace fs = std::filesystem;

// python/kopt/__init__.py builds the same struct with ctypes; these offsets
// are the contract between the two.
static_assert(sizeof(kopt_tensor) == 144);
static_assert(offsetof(kopt_tensor, data) == 0);
static_assert(offsetof(kopt_tensor, dtype) == 8);
static_assert(offsetof(kopt_tensor, ndim) == 12);
static_assert(offsetof(kopt_tensor, shape) == 16);
static_assert(offsetof(kopt_tensor, strides) == 80);

TEST(Abi, HeaderCompilesAsPlainC) {
  auto dir = testing::ScratchDir("abi-c");
  ProcessOptions o;
  o.stdin_data = "#include <kopt/abi.h>\nint main(void) { kopt_tensor t; t.ndim = 0; return t.ndim; }\n";
  ProcessResult r = RunProcess({"cc", "-std=c99", "-Wall", "-Werror", "-I" + (testing::SourceDir() / "include").string(),
                                "-x", "c", "-", "-o", (dir / "a.out").string()},
                               o);
  EXPECT_TRUE(r.ok()) << r.err;
}

TEST(Abi, PythonLoaderMirrorsTheLayout) {
  // The ctypes mirror must declare the same fields in the same order.
  std::string py = ReadTextFile(testing::SourceDir() / "python/kopt/__init__.py");
  std::regex fields(R"re(\("data",\s*ctypes\.c_void_p\),\s*\("dtype",\s*ctypes\.c_int32\),\s*\("ndim",\s*ctypes\.c_int32\),\s*\("shape",\s*ctypes\.c_int64\s*\*\s*\w+\),\s*\("strides",\s*ctypes\.c_int64\s*\*\s*\w+\))re");
  EXPECT_TRUE(std::regex_search(py, fields)) << "python/kopt/__init__.py no longer mirrors kopt_tensor";
  EXPECT_EQ(KOPT_MAX_DIMS, 8);
}

TEST(Solutions, EveryShippedCudaSolutionCompiles) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  BuilderOptions bo;
  bo.cache_dir = testing::ScratchDir("solutions") / "builds";
  bo.include_dir = testing::SourceDir() / "include";
  auto builder = MakeNvccBuilder(bo);
  std::vector<BuildRequest> reqs;
  for (const auto& e : fs::recursive_directory_iterator(testing::SourceDir() / "tasks")) {
    if (e.path().extension() != ".cu" || e.path().parent_path().filename() != "solutions") continue;
    reqs.push_back({ReadTextFile(e.path()), e.path().filename().string(), {}});
  }
  ASSERT_GE(reqs.size(), 8u);
  auto results = builder->BuildAll(reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_TRUE(results[i].ok) << reqs[i].name << ":\n" << results[i].log;
    EXPECT_FALSE(results[i].resources.empty()) << reqs[i].name;
  }
}

}  // namespace
}  // namespace kopt
