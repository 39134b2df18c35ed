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

Ceilings SomeCeilings() {
  Ceilings c;
  c.bandwidth_bytes_per_s = 4e12;
  c.fp32_flops_per_s = 60e12;
  c.bf16_flops_per_s = 900e12;
  return c;
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
  // Strict fp32 GEMMs as split-precision 3xTF32: three TF32 products each,
  // 133 TFLOP/s here, faster than the CUDA cores' 60.
  EXPECT_NEAR(FloorMs(1e6, 1e12, 0, 0, "float32", c, &bound), 3e3 / 400, 1e-9);
  c.tf32_flops_per_s = 120e12;  // a third of it slower than the CUDA cores
  EXPECT_NEAR(FloorMs(1e6, 1e12, 0, 0, "float32", c, &bound), 1e3 / 60, 1e-9);
}

TEST(Bundle, LatencyStagesCountDependentMatrixOpsAndRecurrentSteps) {
  // Three linear layers in a row: three dependent GEMMs; the activations and
  // views between them add none.
  const Json mlp = ReadJsonFile(testing::SourceDir() / "tests/data/graphs/level3_01_mlp.json");
  EXPECT_EQ(LatencyStages(mlp), 3);
  // Two GEMMs side by side on the same input, then an add: one step deep.
  Json side = Json::parse(R"({"values": [{"shape": [4, 4]}, {"shape": [4, 4]}, {"shape": [4, 4]},
    {"shape": [4, 4]}, {"shape": [4, 4]}], "nodes": [
    {"op": "aten::mm", "class": "matrix", "in": [0, 1], "out": [2]},
    {"op": "aten::mm", "class": "matrix", "in": [0, 1], "out": [3]},
    {"op": "aten::add.Tensor", "class": "other", "in": [2, 3], "out": [4]}]})");
  EXPECT_EQ(LatencyStages(side), 1);
  // cuDNN's LSTM, batch first, 2 layers over 256 time steps: 512 steps.
  Json rnn = Json::parse(R"({"values": [{"shape": [64, 256, 256]}, {"shape": [64, 256, 512]}],
    "nodes": [{"op": "aten::_cudnn_rnn", "class": "matrix", "in": [0], "out": [1],
    "args": [{"v": 0}, [], 4, null, null, null, 2, 512, 0, 2, true, 0.0, true, false, [], null]}]})");
  EXPECT_EQ(LatencyStages(rnn), 512);
  EXPECT_EQ(LatencyStages(Json::object()), 0);
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
