#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "task/bundle.h"
#include "task/task_loader.h"
#include "testing/paths.h"

namespace kopt {
namespace {

void Write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

const char* kTask =
    "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x)\n\ndef get_inputs():\n    return [torch.randn(4)]\n\n"
    "def get_init_inputs():\n    return []\n";

TEST(TaskLoader, AcceptsKernelBenchFileAndRejectsOthers) {
  auto dir = testing::ScratchDir("tasks");
  Write(dir / "a" / "01_relu.py", kTask);
  Write(dir / "a" / "notes.py", "print('hello')\n");
  Write(dir / "a" / "solutions" / "01_relu.py", "class ModelNew(nn.Module):\n    pass\n");
  Write(dir / "a" / "solutions" / "01_relu.cu", "extern \"C\" int kopt_forward() { return 0; }\n");
  Write(dir / "a" / "solutions" / "01_relu_v2.cu", "int kopt_forward;\n");
  Write(dir / "a" / "solutions" / "011_other.cu", "int kopt_forward;\n");

  Task t = LoadTask(dir / "a" / "01_relu.py");
  EXPECT_EQ(t.name, "01_relu");
  EXPECT_THROW(LoadTask(dir / "a" / "notes.py"), Error);
  EXPECT_THROW(LoadTask(dir / "missing.py"), Error);
  EXPECT_THROW(LoadTask(dir / "a"), Error);

  auto tasks = FindTasks(dir);
  ASSERT_EQ(tasks.size(), 1u);  // solutions/ and non-tasks skipped
  EXPECT_EQ(tasks[0].name, "a/01_relu");
  auto sols = FindSolutions(tasks[0]);
  ASSERT_EQ(sols.size(), 3u);
  EXPECT_EQ(sols[0].kind, CandidateKind::kCuda);
  EXPECT_EQ(sols[0].name, "01_relu.cu");
  EXPECT_EQ(sols[1].kind, CandidateKind::kHybrid);
  EXPECT_EQ(sols[2].name, "01_relu_v2.cu");
}

TEST(TaskLoader, CandidateKinds) {
  auto dir = testing::ScratchDir("cands");
  Write(dir / "k.cu", "// no entry point\n");
  Write(dir / "m.py", "x = 1\n");
  Write(dir / "m.txt", "x\n");
  EXPECT_THROW(LoadCandidate(dir / "k.cu"), Error);
  EXPECT_THROW(LoadCandidate(dir / "m.py"), Error);
  EXPECT_THROW(LoadCandidate(dir / "m.txt"), Error);
  EXPECT_THROW(LoadCandidate(dir / "none.cu"), Error);
}

Json CaptureReply(double out_std, double seed_diff, double max_abs = 3.0) {
  Json stat{{"mean", 0.5}, {"std", out_std}, {"max_abs", max_abs}, {"numel", 1024}, {"nan", 0}, {"inf", 0}};
  return Json{
      {"signature",
       {{"inputs", {{{"name", "x"}, {"role", "input"}, {"shape", {1024}}, {"dtype", "float32"}, {"strides", {1}}}}},
        {"outputs", {{{"name", "out0"}, {"shape", {1024}}, {"dtype", "float32"}, {"strides", {1}}}}},
        {"n_forward_inputs", 1},
        {"training", true}}},
      {"outputs_stats", {{stat}, {stat}}},
      {"seed_rel_diff", {seed_diff}},
      {"repeat_rel_diff", {0.0}},
      {"ref_error", {{{"max_abs", 1e-7}, {"rel_l2", 1e-8}, {"ref64_max_abs", 3.0}}}},
      {"graph", {{"flops", 1024}, {"flops_by_class", {{"matrix", 0}, {"other", 1024}}}, {"nodes", Json::array()}}},
      {"min_bytes", 8192},
      {"kernels", {{{"name", "relu_kernel"}, {"calls", 1}, {"device_ms", 0.01}}}}};
}

Ceilings SomeCeilings() {
  Ceilings c;
  c.bandwidth_bytes_per_s = 4e12;
  c.fp32_flops_per_s = 60e12;
  c.bf16_flops_per_s = 900e12;
  return c;
}

TEST(Bundle, HealthyTaskHasNoFlagsAndMemoryFloor) {
  Task t{"/x/01_relu.py", "01_relu", TaskFormat::kKernelBench};
  DeviceInfo gpu;
  gpu.available = true;
  TaskBundle b = BundleFromCapture(t, "h", CaptureReply(0.8, 1.2), gpu, SomeCeilings());
  EXPECT_TRUE(b.flags.empty());
  EXPECT_FALSE(b.Degenerate());
  EXPECT_EQ(b.floor_bound, "memory");
  EXPECT_NEAR(b.floor_ms, 1e3 * 8192 / 4e12, 1e-12);
  EXPECT_NEAR(b.hard_floor_ms, 1e3 * 8192 / 4e12, 1e-12);  // x read, out written
  ASSERT_EQ(b.inputs.size(), 1u);
  EXPECT_EQ(b.inputs[0].Numel(), 1024);
  EXPECT_TRUE(b.training);

  TaskBundle back = BundleFromJson(ToJson(b));
  EXPECT_EQ(ToJson(back), ToJson(b));
  // Without a GPU there are no ceilings worth a floor.
  EXPECT_EQ(BundleFromCapture(t, "h", CaptureReply(0.8, 1.2), DeviceInfo{}, SomeCeilings()).floor_ms, 0);
}

// The operators capture charged no FLOPs travel with the bundle; a bundle
// captured before they were listed says it does not know (absent), not
// "none".
TEST(Bundle, UncountedOpsRoundTripAndAbsenceIsUnknown) {
  Task t{"/x/01_relu.py", "01_relu", TaskFormat::kKernelBench};
  Json reply = CaptureReply(0.8, 1.2);
  TaskBundle old = BundleFromCapture(t, "h", reply, DeviceInfo{}, SomeCeilings());
  EXPECT_FALSE(old.uncounted_ops.has_value());
  EXPECT_FALSE(BundleFromJson(ToJson(old)).uncounted_ops.has_value());
  reply["uncounted_ops"] = {"aten::special_bessel_j0", "aten::cummax"};
  TaskBundle b = BundleFromCapture(t, "h", reply, DeviceInfo{}, SomeCeilings());
  ASSERT_TRUE(b.uncounted_ops.has_value());
  EXPECT_EQ(b.uncounted_ops->size(), 2u);
  TaskBundle back = BundleFromJson(ToJson(b));
  ASSERT_TRUE(back.uncounted_ops.has_value());
  EXPECT_EQ(*back.uncounted_ops, *b.uncounted_ops);
  reply["uncounted_ops"] = Json::array();
  EXPECT_TRUE(BundleFromJson(ToJson(BundleFromCapture(t, "h", reply, DeviceInfo{}, SomeCeilings())))
                  .uncounted_ops->empty());
}

// cuDNN's fused RNN (nn.LSTM on a GPU) is matrix work cuDNN may run in
// TF32, like its convolutions; other matrix work stays strict fp32.
TEST(Bundle, CudnnRnnAndConvolutionFlopsCountAsTf32) {
  Task t{"/x/lstm.py", "lstm", TaskFormat::kKernelBench};
  DeviceInfo gpu;
  gpu.available = true;
  Json reply = CaptureReply(0.8, 1.2);
  reply["graph"] = {{"flops", 1000},
                    {"flops_by_class", {{"matrix", 900}, {"other", 100}}},
                    {"nodes",
                     {{{"op", "aten::_cudnn_rnn"}, {"flops", 600}, {"class", "matrix"}},
                      {{"op", "aten::convolution"}, {"flops", 200}, {"class", "matrix"}},
                      {{"op", "aten::mm"}, {"flops", 100}, {"class", "matrix"}}}}};
  TaskBundle b = BundleFromCapture(t, "h", reply, gpu, SomeCeilings());
  EXPECT_EQ(b.conv_flops, 800);
  auto by = FlopsByPrecision(b);
  EXPECT_EQ(by.at("tf32"), 800);
  EXPECT_EQ(by.at("fp32"), 200);  // the mm and the pointwise rest
}

TEST(Bundle, FlagsDegenerateReferences) {
  Task t{"/x/t.py", "t", TaskFormat::kKernelBench};
  EXPECT_TRUE(BundleFromCapture(t, "h", CaptureReply(0, 1.0), {}, SomeCeilings()).HasFlag(flags::kNearConstant));
  EXPECT_TRUE(BundleFromCapture(t, "h", CaptureReply(0.5, 0.0), {}, SomeCeilings()).HasFlag(flags::kSeedIndependent));
  auto zero = BundleFromCapture(t, "h", CaptureReply(0, 0, 0), {}, SomeCeilings());
  EXPECT_TRUE(zero.HasFlag(flags::kNearZero));
  EXPECT_TRUE(zero.Degenerate());
  EXPECT_EQ(zero.flags.size(), zero.flag_notes.size());
}

TEST(Bundle, FloorUsesTheFastestAllowedRate) {
  Ceilings c = SomeCeilings();
  std::string bound;
  // 1 TFLOP of fp32 matrix work on CUDA cores at 60 TFLOP/s: 16.7 ms.
  EXPECT_NEAR(FloorMs(1e6, 1e12, 0, 0, "float32", c, &bound), 1e3 / 60, 1e-9);
  EXPECT_EQ(bound, "compute");
  // The same work in bf16 may use tensor cores.
  EXPECT_NEAR(FloorMs(1e6, 1e12, 0, 0, "bfloat16", c, &bound), 1e3 / 900, 1e-9);
  // fp32 convolutions run in TF32 under PyTorch's defaults.
  c.tf32_flops_per_s = 400e12;
  EXPECT_NEAR(FloorMs(1e6, 1e12, 1e12, 0, "float32", c, &bound), 1e3 / 400, 1e-9);
}

TEST(Device, NominalRatesRaiseMeasuredCeilings) {
  DeviceInfo d;
  d.cc_major = 9;
  d.sm_count = 132;
  d.max_sm_clock_mhz = 1980;
  Json probes{{"bandwidth", {{{"probe", "copy_"}, {"bytes_per_s", 4.3e12}}, {{"probe", "add"}, {"bytes_per_s", 4.4e12}}}},
              {"matmul", {{{"probe", "sgemm_fp32"}, {"dtype", "float32"}, {"flops_per_s", 50e12}},
                          {{"probe", "bf16"}, {"dtype", "bfloat16"}, {"flops_per_s", 790e12}}}}};
  Ceilings c = CeilingsFromProbes(probes, d);
  EXPECT_DOUBLE_EQ(c.bandwidth_bytes_per_s, 4.4e12);
  EXPECT_NEAR(c.fp32_flops_per_s, 256.0 * 132 * 1980e6, 1);  // nominal beats cuBLAS sgemm
  EXPECT_NEAR(c.bf16_flops_per_s, 4096.0 * 132 * 1980e6, 1);
  EXPECT_EQ(CeilingsFromJson(ToJson(c)).bandwidth_bytes_per_s, c.bandwidth_bytes_per_s);
}

}  // namespace
}  // namespace kopt

namespace kopt {
namespace {

TEST(Bundle, FlopsByPrecisionChargesMatrixWorkInTheComputeType) {
  TaskBundle b;
  b.inputs.push_back(TensorSpec{"A", "input", "float16", {4096, 2048}, {}});
  b.outputs.push_back(TensorSpec{"out0", "output", "float16", {4096, 4096}, {}});
  b.flops = 100;
  b.matrix_flops = 90;
  auto by = FlopsByPrecision(b);
  EXPECT_EQ(by.at("fp16"), 90);
  EXPECT_EQ(by.at("fp32"), 10);
  // An fp32 task: strict fp32 matrix work on CUDA cores, convolutions at TF32.
  b.inputs[0].dtype = b.outputs[0].dtype = "float32";
  b.conv_flops = 30;
  by = FlopsByPrecision(b);
  EXPECT_EQ(by.at("fp32"), 70);
  EXPECT_EQ(by.at("tf32"), 30);
  EXPECT_EQ(ComputeDtype(b), "float32");
}

}  // namespace
}  // namespace kopt
