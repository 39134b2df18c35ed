// The ABI export check on real shared objects, built by the host compiler
// (the same ELF dynamic symbol table nvcc's host side produces).
#include "build/abi_exports.h"

#include <gtest/gtest.h>

#include "build/builder.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

// Compiles `source` (C++) into a shared object; skips the test without a
// host compiler.
fs::path SharedObject(const fs::path& dir, const std::string& name, const std::string& source) {
  WriteTextFileAtomic(dir / (name + ".cc"), source);
  fs::path so = dir / (name + ".so");
  ProcessResult r =
      RunProcess({"c++", "-shared", "-fPIC", "-I" + (testing::SourceDir() / "include").string(),
                  "-o", so.string(), (dir / (name + ".cc")).string()});
  EXPECT_TRUE(r.ok()) << r.err;
  return so;
}

constexpr char kSignature[] =
    "int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out, kopt_stream "
    "stream)";

TEST(AbiExports, CLinkageDefinitionPasses) {
  if (FindOnPath("c++").empty()) GTEST_SKIP() << "no host C++ compiler";
  fs::path dir = testing::ScratchDir("abi-exports-ok");
  fs::path so = SharedObject(
      dir, "ok", std::string("#include <kopt/abi.h>\n") + kSignature + " { return 0; }\n");
  std::vector<std::string> names = ExportedSymbols(so);
  EXPECT_NE(std::find(names.begin(), names.end(), "kopt_forward"), names.end());
  EXPECT_EQ(MissingAbiExport(so), "");
}

TEST(AbiExports, CppLinkageIsNamedAsSuch) {
  if (FindOnPath("c++").empty()) GTEST_SKIP() << "no host C++ compiler";
  fs::path dir = testing::ScratchDir("abi-exports-cpp");
  // The ABI's types without its extern "C" declaration of kopt_forward.
  fs::path so = SharedObject(
      dir, "cpp",
      "#include <stdint.h>\nstruct kopt_tensor; typedef struct CUstream_st* kopt_stream;\n" +
          std::string(kSignature) + " { return 0; }\n");
  std::string why = MissingAbiExport(so);
  EXPECT_NE(why.find("with C++ linkage (as _Z12kopt_forward"), std::string::npos) << why;
  EXPECT_NE(why.find("extern \"C\""), std::string::npos) << why;
}

TEST(AbiExports, DeclarationCommentOrStringIsNotADefinition) {
  if (FindOnPath("c++").empty()) GTEST_SKIP() << "no host C++ compiler";
  fs::path dir = testing::ScratchDir("abi-exports-none");
  fs::path so = SharedObject(dir, "none",
                             "#include <kopt/abi.h>\n// kopt_forward is below\n"
                             "const char* name() { return \"kopt_forward\"; }\n"
                             "int call(kopt_tensor* t) { return kopt_forward(t, 1, t, 1, 0); }\n");
  std::string why = MissingAbiExport(so);
  EXPECT_NE(why.find("defines no kopt_forward"), std::string::npos) << why;
}

TEST(AbiExports, NotAnElfFile) {
  fs::path dir = testing::ScratchDir("abi-exports-text");
  WriteTextFileAtomic(dir / "x.so", "not an object");
  std::string error;
  EXPECT_TRUE(ExportedSymbols(dir / "x.so", &error).empty());
  EXPECT_NE(error.find("is not an ELF64 shared object"), std::string::npos) << error;
  EXPECT_NE(MissingAbiExport(dir / "x.so").find("cannot export kopt_forward"), std::string::npos);
}

// The wrapper turns a successful build without the export into a failed
// one, reason in the log; failures and good builds pass through.
TEST(AbiExports, WrapperFailsBuildsWithoutTheExport) {
  if (FindOnPath("c++").empty()) GTEST_SKIP() << "no host C++ compiler";
  fs::path dir = testing::ScratchDir("abi-exports-wrap");
  fs::path good = SharedObject(
      dir, "good", std::string("#include <kopt/abi.h>\n") + kSignature + " { return 0; }\n");
  fs::path bad = SharedObject(dir, "bad", "int unrelated() { return 1; }\n");
  struct Canned : Builder {
    std::vector<BuildResult> results;
    BuildResult Build(const BuildRequest& r) override { return results.at(std::stoi(r.name)); }
    std::vector<BuildResult> BuildAll(const std::vector<BuildRequest>& rs) override {
      std::vector<BuildResult> out;
      for (const auto& r : rs) out.push_back(Build(r));
      return out;
    }
  };
  auto canned = std::make_unique<Canned>();
  BuildResult ok;
  ok.ok = true;
  ok.so_path = good;
  BuildResult missing = ok;
  missing.so_path = bad;
  missing.log = "nvcc said nothing\n";
  BuildResult failed;
  failed.log = "syntax error\n";
  canned->results = {ok, missing, failed};
  auto builder = WithAbiExportCheck(std::move(canned));
  std::vector<BuildResult> rs = builder->BuildAll({{"", "0", {}}, {"", "1", {}}, {"", "2", {}}});
  EXPECT_TRUE(rs[0].ok);
  EXPECT_FALSE(rs[1].ok);
  EXPECT_NE(rs[1].log.find("nvcc said nothing\nkopt: the shared object defines no kopt_forward"),
            std::string::npos)
      << rs[1].log;
  EXPECT_FALSE(rs[2].ok);
  EXPECT_EQ(rs[2].log, "syntax error\n");
  EXPECT_FALSE(builder->Build({"", "1", {}}).ok);
}

}  // namespace
}  // namespace kopt
