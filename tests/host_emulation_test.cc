// CUDA candidates verified on the CPU (`--arch host`, include/kopt/host_cuda.h):
// the fusion generator's kernels and the template library's, planned from
// small tasks' op graphs (tests/data/host_emulation, one per op class) and
// judged by the full verifier of a CPU worker through `kopt eval --device
// cpu`; a kernel with one deliberate error is rejected the same way.
//
// Built a second time with KOPT_ON_GPU as tests/gpu_plan_options_test (ctest
// label gpu): the same plans, every cuda option, built by nvcc and verified
// on the GPU (skipped without one).
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "build/host_emulation.h"
#include "core/json.h"
#include "core/subprocess.h"
#include "core/task.h"
#include "kopt/abi.h"
#include "plan/planner.h"
#include "plan/templates.h"
#include "run/worker_channel.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

fs::path Data() { return testing::SourceDir() / "tests" / "data" / "host_emulation"; }

#ifdef KOPT_ON_GPU
constexpr const char* kDevice = "cuda";
#define KOPT_REQUIRE_DEVICE() KOPT_REQUIRE_GPU()
#define KOPT_SUITE GpuPlanOptions
#else
constexpr const char* kDevice = "cpu";
#define KOPT_REQUIRE_DEVICE() (void)0
#define KOPT_SUITE HostEmulation
#endif

/// `kopt eval TASK CU --device cpu` (or cuda): its exit and JSON record.
ProcessResult Eval(const fs::path& task, const fs::path& cu, const fs::path& json) {
  ProcessOptions o;
  o.timeout_s = 600;
  o.env["KOPT_CACHE"] = testing::ScratchDir("host-emulation-cache").string();
  // KOPT_BIN: a kopt binary carried to the GPU machine (bench/devbin.sh).
  const char* bin = std::getenv("KOPT_BIN");
  return RunProcess({bin && *bin ? bin : KOPT_BINARY, "eval", task.string(), cu.string(),
                     "--device", kDevice, "--max-seconds", "0.05", "--json", json.string()},
                    o);
}

std::string Verdict(const fs::path& json) {
  const Json j = ReadJsonFile(json);
  const Json& rec = j.at("records").at(0);
  return rec.at("outcome").value("verdict", rec.at("outcome").value("kind", "?"));
}

/// A CPU worker that records op graphs on the meta device.
std::unique_ptr<WorkerChannel> GraphWorker() {
  WorkerOptions wo;
  wo.repo_root = testing::SourceDir();
  wo.device = "cpu";
  wo.cache_dir = testing::ScratchDir("host-emulation-worker");
  return MakeProcessWorker(wo);
}

/// The plan of one task from the graph the worker records; the task's
/// source goes in with `with_source` (hybrid options need it).
Plan PlanOfTask(WorkerChannel* worker, const fs::path& task, bool with_source) {
  WorkerReply r = worker->Call(Json{{"op", "graph"}, {"task", task.string()}}, 300);
  EXPECT_TRUE(r.ok()) << task << ": " << r.message;
  TaskBundle b;
  b.graph = r.body.value("graph", Json::object());
  b.floor_ms = 1.0;
  PlanInputs in;
  in.bundle = &b;
  in.task_stem = task.stem().string();
  in.templates = LoadTemplates(testing::SourceDir() / "kernels");
  if (with_source) in.task_source = ReadTextFile(task);
  return MakePlan(in);
}

/// The plan's cuda options for one task: label -> source.
std::map<std::string, std::string> CudaOptions(WorkerChannel* worker, const fs::path& task) {
  std::map<std::string, std::string> out;
  for (const PlanOption& o : PlanOfTask(worker, task, false).options)
    if (o.candidate.kind == CandidateKind::kCuda) out[o.label] = o.candidate.source;
  return out;
}

/// The plan's library replays of a task (tests/data/library_replay), at
/// their knobs' defaults and with each rewrite turned back (a knob set to
/// 0): "label [KNOB=0]" -> source.
std::map<std::string, std::string> LibraryReplays(WorkerChannel* worker, const fs::path& task) {
  std::map<std::string, std::string> out;
  for (const PlanOption& o : PlanOfTask(worker, task, true).options) {
    if (o.space != "library") continue;
    out[o.label] = o.candidate.source;
    for (const char* knob : {"CHANNELS_LAST", "SDPA", "POOL_FIRST", "LT_EPILOGUE", "BN_KERNEL",
                             "POOL_KERNEL", "FUSED_TAIL"}) {
      const std::regex line(fmt::format("\n{0} = 1  # kopt:knob {0} 1", knob));
      if (std::regex_search(o.candidate.source, line))
        out[fmt::format("{} [{}=0]", o.label, knob)] = std::regex_replace(
            o.candidate.source, line, fmt::format("\n{0} = 0  # kopt:knob {0} 0", knob));
    }
  }
  return out;
}

#ifndef KOPT_ON_GPU
TEST(HostEmulation, RewritesLaunchesAndDynamicSharedMemory) {
  const HostSource h = HostEmulationSource(
      "extern __shared__ __align__(16) float smem[];\n"
      "k<VEC, true><<<(unsigned)blocks, THREADS, 0, st>>>(a, f(n, 2));\n"
      "ns::k2<<<g, b>>>(x);\n");
  ASSERT_TRUE(h.ok) << h.why_not;
  EXPECT_NE(
      h.source.find("float* const smem = reinterpret_cast<float*>(::kopt_host::dynamic_smem());"),
      std::string::npos)
      << h.source;
  EXPECT_NE(h.source.find("::kopt_host::launch([&]() { k<VEC, true>(a, f(n, 2)); }, "
                          "(unsigned)blocks, THREADS, 0, st);"),
            std::string::npos)
      << h.source;
  EXPECT_NE(h.source.find("::kopt_host::launch([&]() { ns::k2(x); }, g, b);"), std::string::npos)
      << h.source;
  EXPECT_FALSE(HostEmulationSource("asm volatile(\"mma.sync ...\");").ok);
  EXPECT_FALSE(HostEmulationSource("#include <cublas_v2.h>\n").ok);
}

/// The address of a template kernel's __shared__ array in a host build of
/// `cu` with -DN=n, through the ABI (an int64 output of one element).
unsigned long long SharedArrayAddress(const fs::path& cu, int n, void** handle) {
  const ProcessResult b = RunProcess({KOPT_BINARY, "build", cu.string(), "--arch", "host", "--json",
                                      "--cache", testing::ScratchDir("host-unique-cache").string(),
                                      fmt::format("--nvcc-flag=-DN={}", n)});
  const Json j = Json::parse(b.out.substr(b.out.rfind('{')));
  EXPECT_TRUE(j.value("ok", false)) << b.out << b.err;
  *handle = dlopen(j.value("so_path", "").c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(*handle, nullptr) << dlerror();
  if (!*handle) return 0;
  using Forward = int (*)(const kopt_tensor*, int, kopt_tensor*, int, void*);
  auto forward = reinterpret_cast<Forward>(dlsym(*handle, "kopt_forward"));
  unsigned long long where = 0;
  kopt_tensor out{};
  out.data = &where;
  out.dtype = KOPT_INT64;
  out.ndim = 1;
  out.shape[0] = 1;
  out.strides[0] = 1;
  EXPECT_EQ(forward(nullptr, 0, &out, 1, nullptr), 0);
  return where;
}

TEST(HostEmulation, TwoBuildsOfOneTemplateKernelKeepTheirOwnSharedMemory) {
  // A template kernel's __shared__ array is a static local of an inline
  // function: bound process-wide by g++'s STB_GNU_UNIQUE unless host builds
  // turn it off, so a second build at a larger size wrote past the first
  // build's array (a crash, or a verdict on corrupted memory).
  const fs::path dir = testing::ScratchDir("host-unique");
  const fs::path cu = dir / "where.cu";
  WriteTextFileAtomic(
      cu,
      "#include <kopt/abi.h>\n"
      "template <int W> __global__ void where(unsigned long long* out) {\n"
      "  __shared__ float s[N * W];\n"
      "  s[threadIdx.x] = 1.f;\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x == 0) *out = (unsigned long long)(uintptr_t)&s[0];\n"
      "}\n"
      "extern \"C\" int kopt_forward(const kopt_tensor*, int, kopt_tensor* out, int,\n"
      "                                kopt_stream) {\n"
      "  where<1><<<1, 32>>>(static_cast<unsigned long long*>(out[0].data));\n"
      "  return (int)cudaGetLastError();\n"
      "}\n");
  void* a = nullptr;
  void* b = nullptr;
  const unsigned long long small = SharedArrayAddress(cu, 32, &a);
  const unsigned long long large = SharedArrayAddress(cu, 4096, &b);
  EXPECT_NE(small, 0u);
  EXPECT_NE(large, 0u);
  EXPECT_NE(small, large) << "both builds use one __shared__ array";
  if (a) dlclose(a);
  if (b) dlclose(b);
}
#endif

TEST(KOPT_SUITE, GeneratedAndTemplateKernelsPassTheVerifier) {
  KOPT_REQUIRE_DEVICE();
  auto worker = GraphWorker();
  const fs::path out = testing::ScratchDir("host-emulation-kernels");
  std::set<std::string> verified;  // "<task>: <label>"
  std::set<std::string> skipped;
  for (const auto& e : fs::directory_iterator(Data())) {
    if (e.path().extension() != ".py") continue;
    const auto options = CudaOptions(worker.get(), e.path());
    EXPECT_FALSE(options.empty()) << e.path().stem() << ": the plan offers no cuda kernel";
    // Column kernels also with their lines split across 4 threads (the
    // partial statistics merged in shared memory), whatever SPLIT the
    // generator chose for these small shapes.
    std::vector<std::pair<std::string, std::string>> runs(options.begin(), options.end());
    for (const auto& [label, source] : options)
      if (source.find("fused_col_kernel") != std::string::npos) {
        std::string s = std::regex_replace(source, std::regex("constexpr int SPLIT = \\d+;"),
                                           "constexpr int SPLIT = 4;");
        s = std::regex_replace(s, std::regex("constexpr int THREADS = \\d+;"),
                               "constexpr int THREADS = 64;");
        if (s != source) runs.emplace_back(label + " [SPLIT=4]", s);
      }
    // The pool template's register kernel at other shapes of its thread
    // tile (float4 loads, overlap from both lanes), and its staged kernel.
    for (const auto& [label, source] : options)
      if (source.find("pool_regs") != std::string::npos)
        for (const auto& [v, rows] : std::vector<std::pair<int, int>>{{4, 1}, {1, 4}, {2, 0}}) {
          std::string s = std::regex_replace(source, std::regex("constexpr int V = \\d+;"),
                                             fmt::format("constexpr int V = {};", v));
          s = std::regex_replace(s, std::regex("constexpr int ROWS = \\d+;"),
                                 fmt::format("constexpr int ROWS = {};", rows));
          runs.emplace_back(fmt::format("{} [V={},ROWS={}]", label, v, rows), s);
        }
    int n = 0;
    for (const auto& [label, source] : runs) {
      if (std::string(kDevice) == "cpu" && !HostEmulationSource(source).ok) {
        skipped.insert(e.path().stem().string() + ": " + label);
        continue;
      }
      const fs::path cu = out / fmt::format("{}_{}.cu", e.path().stem().string(), n);
      const fs::path json = out / fmt::format("{}_{}.json", e.path().stem().string(), n++);
      WriteTextFileAtomic(cu, source);
      ProcessResult r = Eval(e.path(), cu, json);
      ASSERT_TRUE(fs::exists(json)) << label << "\n" << r.out << r.err;
      EXPECT_EQ(Verdict(json), "measured") << e.path().stem() << ": " << label << "\n"
                                           << r.out << r.err;
      if (r.exit_code == 0) verified.insert(e.path().stem().string() + ": " + label);
    }
  }
  for (const auto& v : verified) std::cout << "verified on " << kDevice << ": " << v << "\n";
  for (const auto& s : skipped) std::cout << "not emulatable: " << s << "\n";
  // Every op class of tests/data/host_emulation reached the verifier.
  EXPECT_GE(verified.size(), 35u);
  // Each pool task through the register kernel at three thread tiles and
  // through the staged kernel.
  for (const char* task :
       {"maxpool_3x3s2", "avgpool_3x3s2_odd", "maxpool_3x3s1_rows", "avgpool_2x2s2_ceil_valid"}) {
    int seen = 0;
    for (const auto& v : verified)
      seen += v.rfind(std::string(task) + ": pool/pool2d[", 0) == 0 &&
              v.find("ROWS=") != std::string::npos;
    EXPECT_EQ(seen, 3) << task << ": the pool template's kernels at other thread tiles";
  }
  // Reductions over several trailing dims (a mean over H and W, a layer norm
  // over [C, H, W], an amax over the last two) as one row each, with inputs
  // constant along rows (a bias [C, 1, 1]) or broadcast in the rows' shape
  // (a bias [C] beside the pooled [N, C]) read once per row.
  for (const char* task :
       {"se_gate_hw_mean", "layernorm_chw", "amax_hw", "gap_bias_gelu", "rowmean_bias_tanh"})
    EXPECT_TRUE(verified.count(std::string(task) + ": fused row kernel")) << task;
  // The losses over every element (an explicit mean of |p - t| with a
  // weight, an absmax, nn.MSELoss, F.huber_loss summed) through the total
  // kernel: a row kernel, then the row values combined by one block.
  for (const char* task : {"l1_loss_total", "max_abs_total", "mse_loss_op", "huber_loss_sum"})
    EXPECT_TRUE(verified.count(std::string(task) + ": fused total kernel")) << task;
  // The depthwise tasks (3x3; 3x5 stride (1, 2) + ReLU6; 5x5 stride 2,
  // dilation 2, bias, multiplier 2) each reached it through the template.
  for (const char* task :
       {"depthwise_3x3_odd", "depthwise_3x5_relu6", "depthwise_5x5_s2_dil2_bias_mult2"}) {
    bool seen = false;
    for (const auto& v : verified)
      seen = seen || v.rfind(std::string(task) + ": conv/depthwise_conv2d[", 0) == 0;
    EXPECT_TRUE(seen) << task << ": no conv/depthwise_conv2d option verified";
  }
}

// The library replays (convolutions channels-last, fused attention,
// activations after max pools, kopt's BatchNorm and NHWC pool kernels, group
// norms folded into the fused tail) of
// small networks pass the full verifier
// (second shape, input distributions, BatchNorm's running statistics), at
// every rewrite knob. On the CPU the fused call is PyTorch's own math.
TEST(KOPT_SUITE, LibraryReplaysPassTheVerifierAtEveryKnob) {
  KOPT_REQUIRE_DEVICE();
  auto worker = GraphWorker();
  const fs::path out = testing::ScratchDir("library-replays");
  int n = 0;
  bool pool_kernel = false;  // kopt's NHWC pool kernel ran in some replay
  bool nhwc_tail = false;    // a fused tail read an NHWC convolution output
  bool gn_folded = false;    // a group norm's scale and shift ran inside the tail
  for (const auto& e :
       fs::directory_iterator(testing::SourceDir() / "tests" / "data" / "library_replay")) {
    if (e.path().extension() != ".py") continue;
    const auto replays = LibraryReplays(worker.get(), e.path());
    EXPECT_GE(replays.size(), 2u) << e.path().stem() << ": a replay and a knob at 0";
    for (const auto& [label, source] : replays) {
      pool_kernel = pool_kernel || source.find("= _kopt_pool(") != std::string::npos;
      nhwc_tail = nhwc_tail || source.find("_kopt_tail([_kopt_either(") != std::string::npos;
      gn_folded = gn_folded || source.find(" = _kopt_gn_affine(") != std::string::npos;
      const fs::path py = out / fmt::format("{}_{}.py", e.path().stem().string(), n);
      const fs::path json = out / fmt::format("{}_{}.json", e.path().stem().string(), n++);
      WriteTextFileAtomic(py, source);
      ProcessResult r = Eval(e.path(), py, json);
      ASSERT_TRUE(fs::exists(json)) << label << "\n" << r.out << r.err;
      EXPECT_EQ(Verdict(json), "measured") << e.path().stem() << ": " << label << "\n"
                                           << r.out << r.err;
      std::cout << "verified on " << kDevice << ": " << e.path().stem().string() << ": " << label
                << "\n";
    }
  }
  EXPECT_GE(n, 10);
  EXPECT_TRUE(pool_kernel);
  EXPECT_TRUE(nhwc_tail);
  EXPECT_TRUE(gn_folded);
}

TEST(KOPT_SUITE, AKernelWithOneWrongStoreIsRejected) {
  KOPT_REQUIRE_DEVICE();
  auto worker = GraphWorker();
  const fs::path task = Data() / "silu_bias_channel.py";
  std::string source;
  for (const auto& [label, s] : CudaOptions(worker.get(), task))
    if (s.find("fusion generator") != std::string::npos) source = s;
  ASSERT_FALSE(source.empty());
  // Every element store off by 0.1%: the verifier's tolerance is far tighter.
  const std::string wrong =
      std::regex_replace(source, std::regex(R"((O0\[u\] = ))"), "$1 1.001f * ");
  ASSERT_NE(wrong, source);
  const fs::path dir = testing::ScratchDir("host-emulation-wrong");
  WriteTextFileAtomic(dir / "wrong.cu", wrong);
  ProcessResult r = Eval(task, dir / "wrong.cu", dir / "wrong.json");
  EXPECT_NE(r.exit_code, 0);
  ASSERT_TRUE(fs::exists(dir / "wrong.json")) << r.out << r.err;
  EXPECT_EQ(Verdict(dir / "wrong.json"), "incorrect") << r.out << r.err;
}

}  // namespace
}  // namespace kopt
