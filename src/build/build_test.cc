#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>

#include "build/builder.h"
#include "build/ptxas_report.h"
#include "core/error.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  return ReadTextFile(testing::SourceDir() / "src" / "build" / "testdata" / name);
}

const KernelResources* Find(const std::vector<KernelResources>& ks, const std::string& kernel,
                            const std::string& arch = "sm_90") {
  for (const auto& k : ks) {
    if (k.kernel == kernel && k.arch == arch) return &k;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// ptxas report parsing

TEST(PtxasReport, PlainTemplateAndExternCKernels) {
  auto ks = ParsePtxasReport(Fixture("ptxas_simple.txt"));
  ASSERT_EQ(ks.size(), 4u);
  EXPECT_EQ(ks[0].kernel, "plain_c_kernel");
  EXPECT_EQ(ks[0].demangled, "plain_c_kernel");
  EXPECT_EQ(ks[0].registers, 8);
  const KernelResources* scale = Find(ks, "_Z5scalePffi");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->demangled, "scale(float*, float, int)");
  EXPECT_EQ(scale->registers, 8);
  const KernelResources* axpy = Find(ks, "_Z4axpyIfLi4EEvPT_PKS0_S0_i");
  ASSERT_NE(axpy, nullptr);
  EXPECT_EQ(axpy->demangled, "void axpy<float, 4>(float*, float const*, float, int)");
  EXPECT_EQ(axpy->registers, 14);
  EXPECT_EQ(Find(ks, "_Z4axpyIdLi2EEvPT_PKS0_S0_i")->registers, 12);
  for (const auto& k : ks) {
    EXPECT_EQ(k.arch, "sm_90");
    EXPECT_EQ(k.smem_bytes, 0);
    EXPECT_EQ(k.stack_bytes, 0);
    EXPECT_EQ(k.spill_store_bytes, 0);
    EXPECT_EQ(k.spill_load_bytes, 0);
  }
}

TEST(PtxasReport, StackFrameAndSpills) {
  auto ks = ParsePtxasReport(Fixture("ptxas_spill.txt"));
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kernel, "_Z12spill_kernelPKfPfPKii");
  EXPECT_EQ(ks[0].demangled, "spill_kernel(float const*, float*, int const*, int)");
  EXPECT_EQ(ks[0].registers, 32);
  EXPECT_EQ(ks[0].stack_bytes, 2400);
  EXPECT_EQ(ks[0].spill_store_bytes, 3380);
  EXPECT_EQ(ks[0].spill_load_bytes, 3460);
  EXPECT_EQ(ks[0].smem_bytes, 0);
}

TEST(PtxasReport, StaticSharedMemory) {
  auto ks = ParsePtxasReport(Fixture("ptxas_smem.txt"));
  ASSERT_EQ(ks.size(), 2u);
  const KernelResources* sum = Find(ks, "_ZN3red9block_sumEPKdPdi");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->demangled, "red::block_sum(double const*, double*, int)");
  EXPECT_EQ(sum->registers, 14);
  EXPECT_EQ(sum->smem_bytes, 2048);  // 256 doubles
  const KernelResources* transpose = Find(ks, "_Z9transposePKfPfii");
  ASSERT_NE(transpose, nullptr);
  EXPECT_EQ(transpose->registers, 12);
  EXPECT_EQ(transpose->smem_bytes, 4224);  // 32 x 33 floats
}

TEST(PtxasReport, TwoArchitecturesAndADeviceFunction) {
  auto ks = ParsePtxasReport(Fixture("ptxas_two_archs.txt"));
  ASSERT_EQ(ks.size(), 2u);  // _Z6lookupi is a device function, not an entry
  const KernelResources* sm90 = Find(ks, "_Z9use_tablePfi", "sm_90");
  const KernelResources* sm80 = Find(ks, "_Z9use_tablePfi", "sm_80");
  ASSERT_NE(sm90, nullptr);
  ASSERT_NE(sm80, nullptr);
  EXPECT_EQ(sm90->registers, 12);
  EXPECT_EQ(sm90->cmem_bytes, 0);  // the module-level "256 bytes cmem[3]" is no kernel's
  EXPECT_EQ(sm80->registers, 10);
  EXPECT_EQ(sm80->cmem_bytes, 364);
}

// Hand-written, not captured: the shapes older toolkits print.
TEST(PtxasReport, OlderToolkitFormats) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z6kernelPfi' for 'sm_52'\n"
      "ptxas info    : Function properties for _Z6kernelPfi\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 10 registers, 360 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function '_Z4tilev' for 'sm_70'\n"
      "ptxas info    : Function properties for _Z4tilev\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 20 registers, 48 bytes smem, 352 bytes cmem[0], 8 bytes cmem[2]\n"
      "ptxas info    : Compiling entry function '_Z3oldv' for 'sm_13'\n"
      "ptxas info    : Used 3 registers, 16+16 bytes smem, 4 bytes cmem[1]\n";
  auto ks = ParsePtxasReport(log);
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].registers, 10);
  EXPECT_EQ(ks[0].cmem_bytes, 360);
  EXPECT_EQ(ks[0].stack_bytes, 8);
  EXPECT_EQ(ks[0].spill_store_bytes, 4);
  EXPECT_EQ(ks[0].spill_load_bytes, 12);
  EXPECT_EQ(ks[1].registers, 20);
  EXPECT_EQ(ks[1].smem_bytes, 48);
  EXPECT_EQ(ks[1].cmem_bytes, 360);
  EXPECT_EQ(ks[2].registers, 3);
  EXPECT_EQ(ks[2].smem_bytes, 32);
}

// Hand-written: properties printed before the entry line are still attached.
TEST(PtxasReport, PropertiesBeforeEntry) {
  auto ks = ParsePtxasReport(
      "ptxas info    : Function properties for _Z1kv\n"
      "    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'\n"
      "ptxas info    : Used 6 registers\n");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].stack_bytes, 16);
  EXPECT_EQ(ks[0].registers, 6);
}

TEST(PtxasReport, DemangleLeavesPlainNamesAlone) {
  EXPECT_EQ(Demangle("f"), "f");  // __cxa_demangle alone would say "float"
  EXPECT_EQ(Demangle("_Z1fv"), "f()");
  EXPECT_EQ(Demangle("_Znot-a-name"), "_Znot-a-name");
}

TEST(PtxasReport, NonReportTextYieldsNothing) {
  EXPECT_TRUE(ParsePtxasReport("").empty());
  EXPECT_TRUE(
      ParsePtxasReport("candidate.cu(3): error: expected a \";\"\n1 error detected\n").empty());
}

TEST(BuildJson, RoundTrip) {
  BuildResult r;
  r.ok = true;
  r.hash = "abc";
  r.so_path = "/tmp/x/candidate.so";
  r.log = "ptxas info ...\n";
  r.compile_s = 1.5;
  r.arch = "sm_90a";
  r.resources = ParsePtxasReport(Fixture("ptxas_spill.txt"));
  Json j = ToJson(r);
  EXPECT_EQ(j["resources"][0]["spill_store_bytes"], 3380);
  BuildResult back = BuildResultFromJson(j);
  EXPECT_EQ(ToJson(back), j);
}

// ---------------------------------------------------------------------------
// The nvcc builder against a fake nvcc (no CUDA toolkit needed)

// A shell script standing in for nvcc: prints its arguments, fails, hangs or
// succeeds depending on markers in the source.
std::string WriteFakeNvcc(const fs::path& dir) {
  fs::path script = dir / "fake-nvcc";
  WriteTextFileAtomic(
      script,
      "#!/bin/sh\n"
      "if [ \"$1\" = --version ]; then echo 'fake nvcc 1.0'; exit 0; fi\n"
      "echo \"args: $*\"\n"
      "if grep -q KOPT_FAKE_SLEEP candidate.cu; then sleep 30; fi\n"
      "if grep -q KOPT_FAKE_FAIL candidate.cu; then\n"
      "  echo 'candidate.cu(1): error: fake failure' >&2; exit 2; fi\n"
      "out=''\n"
      "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=\"$2\"; shift; done\n"
      "echo \"ptxas info    : Compiling entry function '_Z4fakev' for 'sm_90'\" >&2\n"
      "echo 'ptxas info    : Used 4 registers, used 0 barriers' >&2\n"
      "touch \"$out\"\n");
  ::chmod(script.c_str(), 0755);
  return script.string();
}

struct FakeBuilder {
  explicit FakeBuilder(const std::string& label, const std::string& arch = "sm_90",
                       double timeout_s = 120) {
    dir = testing::ScratchDir(label);
    options.cache_dir = dir / "cache";
    options.include_dir = testing::SourceDir() / "include";
    options.nvcc = WriteFakeNvcc(dir);
    options.arch = arch;
    options.jobs = 2;
    options.timeout_s = timeout_s;
    builder = MakeNvccBuilder(options);
  }
  int CacheEntries() const {
    int n = 0;
    for ([[maybe_unused]] auto& e : fs::directory_iterator(options.cache_dir)) ++n;
    return n;
  }
  fs::path dir;
  BuilderOptions options;
  std::unique_ptr<Builder> builder;
};

TEST(FakeNvccBuilder, CommandLineFlags) {
  FakeBuilder fake("build-flags", "sm_90a");
  BuildResult r = fake.builder->Build({"__global__ void k() {}\n", "plain", {"-DFOO=1"}});
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_EQ(r.arch, "sm_90a");
  for (const char* flag :
       {"-std=c++17 -O3 -lineinfo -Xcompiler -fPIC -shared -Xptxas -v",
        "-gencode=arch=compute_90a,code=sm_90a", "-DFOO=1 -o candidate.so candidate.cu"}) {
    EXPECT_NE(r.log.find(flag), std::string::npos) << flag << "\n" << r.log;
  }
  EXPECT_NE(r.log.find("-I" + fake.options.include_dir.string()), std::string::npos);
  EXPECT_EQ(r.log.find("-lcublas"), std::string::npos);
  ASSERT_EQ(r.resources.size(), 1u);
  EXPECT_EQ(r.resources[0].registers, 4);

  BuildResult blas = fake.builder->Build({"#include <cublas_v2.h>\n", "blas", {}});
  EXPECT_NE(blas.log.find("-lcublas -lcublasLt"), std::string::npos) << blas.log;
  BuildResult lt = fake.builder->Build({"  #  include \"cublasLt.h\"\n", "lt", {}});
  EXPECT_NE(lt.log.find("-lcublas -lcublasLt"), std::string::npos) << lt.log;
  BuildResult commented = fake.builder->Build({"// #include <cublas_v2.h>\n", "c", {}});
  EXPECT_EQ(commented.log.find("-lcublas"), std::string::npos) << commented.log;
}

// NvccFlags is the recipe the builder runs: exports write the same list.
TEST(FakeNvccBuilder, RunsExactlyNvccFlags) {
  FakeBuilder fake("build-recipe", "sm_90a");
  BuildRequest request{"#include <cublas_v2.h>\n", "recipe", {"-DFOO=1"}};
  BuildResult r = fake.builder->Build(request);
  ASSERT_TRUE(r.ok) << r.log;
  std::string args = "args:";
  for (const auto& f : NvccFlags(fake.options, request)) args += " " + f;
  args += " -o candidate.so candidate.cu\n";
  EXPECT_NE(r.log.find(args), std::string::npos) << args << r.log;

  BuilderOptions no_include;
  no_include.arch = "sm_80";
  std::vector<std::string> flags = NvccFlags(no_include, {"__global__ void k() {}\n", "", {}});
  EXPECT_EQ(flags, (std::vector<std::string>{"-std=c++17", "-O3", "-lineinfo", "-Xcompiler",
                                             "-fPIC", "-shared", "-Xptxas", "-v",
                                             "-gencode=arch=compute_80,code=sm_80"}));
  no_include.arch = "ampere";
  EXPECT_THROW(NvccFlags(no_include, {}), Error);
}

TEST(FakeNvccBuilder, HashCoversSourceAndFlagsNotName) {
  FakeBuilder fake("build-hash");
  const std::string src = "__global__ void k() {}\n";
  BuildResult a = fake.builder->Build({src, "a", {}});
  BuildResult b = fake.builder->Build({src, "b", {}});
  BuildResult flag = fake.builder->Build({src, "a", {"-maxrregcount=32"}});
  BuildResult other = fake.builder->Build({src + "\n", "a", {}});
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_TRUE(b.cache_hit);
  EXPECT_NE(a.hash, flag.hash);
  EXPECT_FALSE(flag.cache_hit);
  EXPECT_NE(a.hash, other.hash);
  EXPECT_EQ(a.so_path, fake.options.cache_dir / a.hash / "candidate.so");
}

TEST(FakeNvccBuilder, HashCoversArch) {
  FakeBuilder h100("build-arch90", "sm_90");
  FakeBuilder h100a("build-arch90a", "sm_90a");
  // Same source, flags and nvcc version text: only the arch differs.
  EXPECT_NE(h100.builder->Build({"x", "", {}}).hash, h100a.builder->Build({"x", "", {}}).hash);
}

TEST(FakeNvccBuilder, PublishedEntryHoldsSourceRecordAndObject) {
  FakeBuilder fake("build-layout");
  BuildResult r = fake.builder->Build({"__global__ void k() {}\n", "layout", {}});
  ASSERT_TRUE(r.ok);
  fs::path entry = fake.options.cache_dir / r.hash;
  EXPECT_TRUE(fs::is_regular_file(entry / "candidate.so"));
  EXPECT_EQ(ReadTextFile(entry / "candidate.cu"), "__global__ void k() {}\n");
  Json record = ReadJsonFile(entry / "build.json");
  EXPECT_EQ(record["hash"], r.hash);
  EXPECT_EQ(record["name"], "layout");
  EXPECT_EQ(fake.CacheEntries(), 1);  // no temporary folder left behind

  // An unreadable record is treated as a miss and replaced.
  WriteTextFileAtomic(entry / "build.json", "{not json");
  BuildResult again = fake.builder->Build({"__global__ void k() {}\n", "layout", {}});
  EXPECT_TRUE(again.ok);
  EXPECT_FALSE(again.cache_hit);
  EXPECT_EQ(ReadJsonFile(entry / "build.json")["hash"], r.hash);
}

TEST(FakeNvccBuilder, FailureIsAValueAndNotCached) {
  FakeBuilder fake("build-fail");
  BuildRequest bad{"KOPT_FAKE_FAIL\n", "bad", {}};
  BuildResult first = fake.builder->Build(bad);
  EXPECT_FALSE(first.ok);
  EXPECT_TRUE(first.so_path.empty());
  EXPECT_NE(first.log.find("fake failure"), std::string::npos) << first.log;
  EXPECT_NE(first.log.find("exit status 2"), std::string::npos) << first.log;
  EXPECT_FALSE(first.hash.empty());
  BuildResult second = fake.builder->Build(bad);
  EXPECT_FALSE(second.ok);
  EXPECT_FALSE(second.cache_hit);
  EXPECT_EQ(fake.CacheEntries(), 0);
}

TEST(FakeNvccBuilder, TimeoutKillsTheCompile) {
  FakeBuilder fake("build-timeout", "sm_90", /*timeout_s=*/1);
  auto t0 = std::chrono::steady_clock::now();
  BuildResult r = fake.builder->Build({"KOPT_FAKE_SLEEP\n", "slow", {}});
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.ok);
  EXPECT_LT(wall, 10);
  EXPECT_NE(r.log.find("timed out after 1 s (slow)"), std::string::npos) << r.log;
  EXPECT_EQ(fake.CacheEntries(), 0);
}

TEST(FakeNvccBuilder, BuildAllKeepsOrderAndMixesFailures) {
  FakeBuilder fake("build-all-fake");
  std::vector<BuildRequest> requests;
  for (int i = 0; i < 8; ++i) {
    requests.push_back({(i % 3 == 1 ? "KOPT_FAKE_FAIL " : "ok ") + std::to_string(i), "", {}});
  }
  auto results = fake.builder->BuildAll(requests);
  ASSERT_EQ(results.size(), requests.size());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(results[i].ok, i % 3 != 1) << i;
    if (results[i].ok) {
      EXPECT_EQ(ReadTextFile(results[i].so_path.parent_path() / "candidate.cu"),
                requests[i].source);
    }
  }
  EXPECT_TRUE(fake.builder->BuildAll({}).empty());
}

TEST(FakeNvccBuilder, BadOptionsThrow) {
  auto dir = testing::ScratchDir("build-options");
  BuilderOptions options;
  options.cache_dir = dir / "cache";
  options.nvcc = WriteFakeNvcc(dir);
  options.arch = "hopper";
  EXPECT_THROW(MakeNvccBuilder(options), Error);
  options.arch = "sm_90";
  options.include_dir = dir;  // no kopt/abi.h there
  EXPECT_THROW(MakeNvccBuilder(options), Error);
  options.include_dir.clear();
  options.nvcc = (dir / "kopt-no-such-nvcc").string();
  EXPECT_THROW(MakeNvccBuilder(options), Error);
  options.nvcc = WriteFakeNvcc(dir);
  options.cache_dir.clear();
  EXPECT_THROW(MakeNvccBuilder(options), Error);
}

// ---------------------------------------------------------------------------
// The nvcc builder with the real toolkit

#define KOPT_REQUIRE_NVCC()                                             \
  do {                                                                  \
    if (!::kopt::testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found"; \
  } while (0)

// A small valid candidate whose one kernel is called `kernel`.
std::string AbiKernel(const std::string& kernel) {
  std::string source = R"(#include <kopt/abi.h>
__global__ void KERNEL(float* y, const float* x, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,
                 kopt_stream stream) {
  long n = kopt_numel(in[0]);
  KERNEL<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(
      (float*)out[0].data, (const float*)in[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)";
  for (size_t at; (at = source.find("KERNEL")) != std::string::npos;) {
    source.replace(at, 6, kernel);
  }
  return source;
}

std::unique_ptr<Builder> RealBuilder(const fs::path& dir, int jobs = 1) {
  BuilderOptions options;
  options.cache_dir = dir / "cache";
  options.include_dir = testing::SourceDir() / "include";
  options.jobs = jobs;
  return MakeNvccBuilder(options);  // finds nvcc on PATH or in /usr/local/cuda/bin
}

TEST(NvccBuilder, CompilesAbiKernelThenHitsCache) {
  KOPT_REQUIRE_NVCC();
  auto dir = testing::ScratchDir("build-real");
  auto builder = RealBuilder(dir);
  BuildResult r = builder->Build({AbiKernel("twice"), "twice", {}});
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_FALSE(r.cache_hit);
  EXPECT_GT(r.compile_s, 0);
  EXPECT_EQ(r.arch, "sm_90");
  ASSERT_TRUE(fs::is_regular_file(r.so_path));
  ProcessResult nm = RunProcess({"nm", "-D", "--defined-only", r.so_path.string()});
  ASSERT_TRUE(nm.ok()) << nm.err;
  EXPECT_NE(nm.out.find(" T kopt_forward"), std::string::npos) << nm.out;
  ASSERT_EQ(r.resources.size(), 1u) << r.log;
  EXPECT_EQ(r.resources[0].demangled, "twice(float*, float const*, long)");
  EXPECT_EQ(r.resources[0].arch, "sm_90");
  EXPECT_GT(r.resources[0].registers, 0);
  EXPECT_EQ(r.resources[0].spill_store_bytes, 0);

  auto t0 = std::chrono::steady_clock::now();
  BuildResult hit = builder->Build({AbiKernel("twice"), "twice again", {}});
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(hit.ok);
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_LT(wall, 0.5);
  EXPECT_EQ(hit.hash, r.hash);
  EXPECT_EQ(hit.so_path, r.so_path);
  EXPECT_EQ(hit.log, r.log);
  EXPECT_EQ(ToJson(hit.resources[0]), ToJson(r.resources[0]));

  // A second builder (another process, in effect) finds the same entry.
  EXPECT_TRUE(RealBuilder(dir)->Build({AbiKernel("twice"), "", {}}).cache_hit);
}

TEST(NvccBuilder, SyntaxErrorIsAFailedResult) {
  KOPT_REQUIRE_NVCC();
  auto dir = testing::ScratchDir("build-real-error");
  auto builder = RealBuilder(dir);
  BuildResult r;
  ASSERT_NO_THROW(r = builder->Build({"#include <kopt/abi.h>\nint kopt_forward( {\n", "bad", {}}));
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(r.cache_hit);
  EXPECT_TRUE(r.so_path.empty());
  EXPECT_NE(r.log.find("candidate.cu("), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("kopt: nvcc (bad) failed with exit status"), std::string::npos) << r.log;
}

TEST(NvccBuilder, BuildAllInParallelKeepsOrder) {
  KOPT_REQUIRE_NVCC();
  auto dir = testing::ScratchDir("build-real-all");
  auto builder = RealBuilder(dir, /*jobs=*/2);
  std::vector<BuildRequest> requests;
  for (int i = 0; i < 4; ++i) {
    requests.push_back({AbiKernel("k" + std::to_string(i)), "k" + std::to_string(i), {}});
  }
  auto results = builder->BuildAll(requests);
  ASSERT_EQ(results.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(results[i].ok) << results[i].log;
    ASSERT_EQ(results[i].resources.size(), 1u);
    EXPECT_EQ(results[i].resources[0].demangled,
              "k" + std::to_string(i) + "(float*, float const*, long)");
    EXPECT_TRUE(fs::is_regular_file(results[i].so_path));
  }
}

TEST(NvccBuilder, FlagChangesHashAndResources) {
  KOPT_REQUIRE_NVCC();
  auto dir = testing::ScratchDir("build-real-flag");
  auto builder = RealBuilder(dir);
  const std::string src =
      ReadTextFile(testing::SourceDir() / "src" / "build" / "testdata" / "kernels_spill.cu");
  BuildResult plain = builder->Build({src, "spill", {}});
  BuildResult capped = builder->Build({src, "spill capped", {"-maxrregcount=32"}});
  ASSERT_TRUE(plain.ok) << plain.log;
  ASSERT_TRUE(capped.ok) << capped.log;
  EXPECT_NE(plain.hash, capped.hash);
  EXPECT_NE(plain.so_path, capped.so_path);
  ASSERT_EQ(capped.resources.size(), 1u);
  EXPECT_EQ(capped.resources[0].registers, 32);
  EXPECT_GT(capped.resources[0].spill_store_bytes, 0);
}

}  // namespace
}  // namespace kopt
