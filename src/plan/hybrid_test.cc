// Library calls with a fused tail, as hybrid ModelNew files: generated for
// the level-2 graphs of the suite, their replayed PyTorch prefix run on the
// CPU (a stub stands in for the compiled tail, which needs a GPU) and
// checked against the task's Model; their CUDA tails compile for sm_90a.
// The channels-last replay of the suite's convolution networks, at each
// layout knob, computes what the Model does (outputs, BatchNorm's running
// statistics) on the CPU.
#include "plan/hybrid.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <tuple>

#include <fmt/format.h>

#include "core/json.h"
#include "plan/planner.h"
#include "plan/sm90a_builds_for_test.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct Generated {
  PlanOption option;
  fs::path task;
};

/// The plan of a suite task from its recorded graph and source.
Plan PlanFor(const std::string& level, const std::string& stem, bool reuse_weights = false,
             int cc_major = 0) {
  static const auto templates = LoadTemplates(testing::SourceDir() / "kernels");
  TaskBundle b;
  b.graph = ReadJsonFile(testing::SourceDir() / "tests" / "data" / "graphs" /
                         (level + "_" + stem + ".json"));
  b.floor_ms = 1;
  b.device.cc_major = cc_major;
  PlanInputs in;
  in.bundle = &b;
  in.task_stem = stem;
  in.templates = templates;
  in.contract.pre_transform_weights = reuse_weights;
  in.task_source = ReadTextFile(testing::SourceDir() / "tasks" / level / (stem + ".py"));
  return MakePlan(in);
}

std::optional<Generated> LibraryOption(const std::string& level, const std::string& stem) {
  for (PlanOption& o : PlanFor(level, stem).options)
    if (o.space == "library+fused")
      return Generated{o, testing::SourceDir() / "tasks" / level / (stem + ".py")};
  return std::nullopt;
}

std::optional<PlanOption> ChannelsLastOption(const std::string& level, const std::string& stem,
                                             bool reuse_weights = false, int cc_major = 0) {
  for (PlanOption& o : PlanFor(level, stem, reuse_weights, cc_major).options)
    if (o.space == "library") return o;
  return std::nullopt;
}

/// The suite's convolution networks: level, stem, whether a fused tail follows.
const std::vector<std::tuple<std::string, std::string, bool>> kConvTasks = {
    // A returned convolution's bias is a tail of its own.
    {"level1", "26_conv2d", true},
    {"level1", "27_depthwise_conv2d", false},
    {"level1", "28_conv_transpose2d", true},
    {"level2", "02_conv2d_relu_biasadd", true},
    {"level2", "04_conv2d_groupnorm_tanh_hardswish_residual", true},
    // Its add + ReLU go into the second BatchNorm's kernel: no tail.
    {"level3", "02_resnet_basic_block", false},
    {"level3", "05_small_cnn", false}};

/// ... and those whose library replay fuses attention.
const std::vector<std::tuple<std::string, std::string, bool>> kReplayTasks = [] {
  auto v = kConvTasks;
  v.emplace_back("level3", "03_transformer_block", false);
  v.emplace_back("level3", "01_mlp", false);
  return v;
}();

const std::vector<std::string> kLevel2 = {"01_linear_gelu_scale",
                                          "02_conv2d_relu_biasadd",
                                          "03_linear_dropout_mish_logsoftmax",
                                          "04_conv2d_groupnorm_tanh_hardswish_residual",
                                          "05_linear_sum_scale_gelu",
                                          "06_linear_batchnorm_relu_scale"};

TEST(Hybrid, EveryLevel2TaskGetsALibraryCallWithAFusedTail) {
  for (const std::string& stem : kLevel2) {
    auto g = LibraryOption("level2", stem);
    ASSERT_TRUE(g) << stem;
    EXPECT_EQ(g->option.candidate.kind, CandidateKind::kHybrid);
    const std::string& src = g->option.candidate.source;
    EXPECT_NE(src.find("class ModelNew(Model):"), std::string::npos) << stem;
    EXPECT_NE(src.find("CUDA_SOURCE = r\"\"\""), std::string::npos) << stem;
    EXPECT_NE(src.find("torch.ops.aten."), std::string::npos) << stem;
  }
  // The group norm folded into the tail takes its sizes from its input at
  // run time (the second shape's batch differs), not the captured 32, 64, 16384.
  const std::string gn = LibraryOption("level2", "04_conv2d_groupnorm_tanh_hardswish_residual")
                             ->option.candidate.source;
  EXPECT_NE(gn.find("_kopt_gn_affine(v5, v3, v4, 8, "), std::string::npos) << gn;
  EXPECT_NE(gn.find("    n, c = x.shape[0], x.shape[1]\n"), std::string::npos);
  EXPECT_EQ(gn.find("16384"), std::string::npos);
}

TEST(Hybrid, TheReplayedPrefixRunsAndKeepsTheModelsParameters) {
  const char* py = std::getenv("KOPT_PYTHON");
  const std::string python = py && *py ? py : "/usr/bin/python3";
  if (std::system((python + " -c 'import torch' > /dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no python with torch";
  const fs::path dir = testing::ScratchDir("hybrid-replay");
  fs::create_directories(dir / "stub" / "kopt");
  // The stub tail: records what it was handed and writes zeros.
  std::ofstream(dir / "stub" / "kopt" / "__init__.py")
      << "def load_cuda(src, *a, **k):\n"
         "    def run(ins, outs):\n"
         "        run.shapes = [tuple(t.shape) for t in ins]\n"
         "        for o in outs: o.zero_()\n"
         "    return run\n";
  std::ofstream(dir / "check.py")
      << "import runpy, sys, torch\n"
         "m = runpy.run_path(sys.argv[1])\n"
         "torch.manual_seed(0); new = m['ModelNew'](*m['get_init_inputs']())\n"
         "torch.manual_seed(0); ref = m['Model'](*m['get_init_inputs']())\n"
         "a, b = new.state_dict(), ref.state_dict()\n"
         "assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), 'parameters "
         "differ'\n"
         "x = [t[:3] if t.dim() > 1 else t for t in m['get_inputs']()]\n"
         "with torch.no_grad():\n"
         "    y = new(*x); r = ref(*x)\n"
         "assert tuple(y.shape) == tuple(r.shape), (y.shape, r.shape)\n"
         "a, b = new.state_dict(), ref.state_dict()\n"
         "assert all(torch.equal(a[k], b[k]) for k in a), 'buffers updated differently'\n"
         "print('ok', m['_kopt_tail'].shapes)\n";
  for (const std::string& stem : kLevel2) {
    auto g = LibraryOption("level2", stem);
    ASSERT_TRUE(g) << stem;
    const fs::path file = dir / (stem + "_modelnew.py");
    std::ofstream(file) << g->option.candidate.source;
    const std::string cmd = "cd " + dir.string() + " && PYTHONPATH=" + (dir / "stub").string() +
                            " " + python + " check.py " + file.string() + " > " +
                            (dir / (stem + ".log")).string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << stem << "\n" << ReadTextFile(dir / (stem + ".log"));
  }
}

TEST(Hybrid, TheGraphedWrapperKeepsTheModelsParametersAndRunsEagerOffTheGpu) {
  const char* py = std::getenv("KOPT_PYTHON");
  const std::string python = py && *py ? py : "/usr/bin/python3";
  if (std::system((python + " -c 'import torch' > /dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no python with torch";
  const fs::path dir = testing::ScratchDir("graphed");
  const fs::path task = testing::SourceDir() / "tasks" / "level3" / "01_mlp.py";
  std::ofstream(dir / "graphed.py") << GraphedSource(ReadTextFile(task), "Model");
  // CPU arguments take the eager path: same parameters, same outputs, and
  // no graph is kept.
  std::ofstream(dir / "check.py")
      << "import runpy, sys, torch\n"
         "m = runpy.run_path(sys.argv[1])\n"
         "torch.manual_seed(0); new = m['ModelNew'](*m['get_init_inputs']())\n"
         "torch.manual_seed(0); ref = m['Model'](*m['get_init_inputs']())\n"
         "assert isinstance(new, m['Model'])\n"
         "x = [t[:2] for t in m['get_inputs']()]\n"
         "with torch.no_grad():\n"
         "    assert torch.equal(new(*x), ref(*x))\n"
         "assert not new.__dict__.get('_kopt_graphs')\n"
         "print('ok')\n";
  const std::string cmd = "cd " + dir.string() + " && " + python + " check.py graphed.py > " +
                          (dir / "log").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << ReadTextFile(dir / "log");
}

TEST(Hybrid, ConvolutionNetworksGetAChannelsLastReplayWithLayoutKnobs) {
  for (const auto& [level, stem, tail] : kConvTasks) {
    auto o = ChannelsLastOption(level, stem);
    ASSERT_TRUE(o) << stem;
    EXPECT_EQ(o->candidate.kind, CandidateKind::kHybrid);
    EXPECT_EQ(o->candidate.name, stem + "[channels-last]");
    const std::string& src = o->candidate.source;
    EXPECT_NE(src.find("CHANNELS_LAST = 1  # kopt:knob CHANNELS_LAST 1 {0,1}"), std::string::npos);
    // cuDNN's algorithm choice stays the process's own (no benchmark knob).
    EXPECT_EQ(src.find("cudnn.benchmark ="), std::string::npos) << stem;
    EXPECT_EQ(src.find("FUSED_TAIL = 1  # kopt:knob") != std::string::npos, tail) << stem;
    EXPECT_EQ(o->detail.value("tail_ops", Json::array()).empty(), !tail) << stem;
    // Activations change layout through kopt's transpose kernel (on the GPU).
    EXPECT_NE(src.find("\nLAYOUT_KERNEL = 1  # kopt:knob LAYOUT_KERNEL 1 {0,1}"), std::string::npos)
        << stem;
    EXPECT_NE(src.find("_KOPT_TRANSPOSE_SOURCE = r\"\"\"\n"), std::string::npos) << stem;
    // Every convolution reads its input and weight through the layout
    // helpers; nothing views or aliases with the captured NCHW strides.
    EXPECT_NE(src.find("torch.ops.aten.convolution(_kopt_cl(v"), std::string::npos) << stem;
    EXPECT_EQ(src.find("_reshape_alias"), std::string::npos) << stem;
    EXPECT_EQ(src.find("torch.ops.aten.view("), std::string::npos) << stem;
    // Weights are converted per call unless the contract allows keeping them.
    EXPECT_EQ(src.find("self._kopt_weight(\""), std::string::npos) << stem;
    EXPECT_NE(ChannelsLastOption(level, stem, true)->candidate.source.find("self._kopt_weight(\""),
              std::string::npos)
        << stem;
  }
  // A convolution only the elementwise tail reads runs without its bias;
  // the tail adds it, reading the NHWC output as it is and writing NCHW.
  const auto cbr = ChannelsLastOption("level2", "02_conv2d_relu_biasadd");
  EXPECT_EQ(cbr->detail.value("tail_conv_biases", 0), 1);
  EXPECT_NE(
      cbr->candidate.source.find("torch.ops.aten.convolution(_kopt_cl(v0), _kopt_cl(v2), None, "),
      std::string::npos)
      << cbr->candidate.source;
  EXPECT_NE(cbr->candidate.source.find("_kopt_tail([_kopt_either(v"), std::string::npos);
  EXPECT_NE(cbr->about.find("also adds 1 convolution bias(es)"), std::string::npos) << cbr->about;
  {
    const auto g = *OpGraphFromJson(ReadJsonFile(testing::SourceDir() / "tests" / "data" /
                                                 "graphs" / "level2_02_conv2d_relu_biasadd.json"));
    const auto m = ConvBiasesIntoTail(g, 1);
    ASSERT_TRUE(m);
    ASSERT_EQ(m->graph.nodes.size(), g.nodes.size() + 2);
    EXPECT_EQ(m->tail_from, 2u);
    EXPECT_EQ(m->graph.nodes[0].base, "view");
    EXPECT_TRUE(m->graph.nodes[1].args[2].is_null());
    EXPECT_EQ(m->graph.nodes[2].base, "add");
    EXPECT_EQ(m->graph.nodes[2].out[0], g.nodes[0].out[0]);
    EXPECT_EQ(m->graph.Producer(g.nodes[0].out[0])->index, 2);
    // Read by a node before the tail: the bias stays.
    EXPECT_FALSE(ConvBiasesIntoTail(g, 2));
  }
  // A convolution the forward returns: with no tail, its bias becomes one
  // at the end, and the add remakes the returned value.
  for (const char* stem : {"26_conv2d", "28_conv_transpose2d"}) {
    const auto g = *OpGraphFromJson(ReadJsonFile(testing::SourceDir() / "tests" / "data" /
                                                 "graphs" / fmt::format("level1_{}.json", stem)));
    const auto m = ConvBiasesIntoTail(g, g.nodes.size());
    ASSERT_TRUE(m) << stem;
    EXPECT_EQ(m->moved, 1);
    EXPECT_EQ(m->tail_from, m->graph.nodes.size() - 1);
    EXPECT_EQ(m->graph.nodes.back().base, "add");
    EXPECT_EQ(m->graph.nodes.back().out[0], g.outputs[0]);
    const auto o = ChannelsLastOption("level1", stem);
    EXPECT_TRUE(o->detail.value("bias_tail", false)) << stem;
    EXPECT_EQ(o->detail.value("tail_conv_biases", 0), 1) << stem;
    EXPECT_NE(o->candidate.source.find("_kopt_tail([_kopt_either(v"), std::string::npos) << stem;
    EXPECT_NE(o->about.find("returned convolution(s) run without their bias"), std::string::npos)
        << o->about;
  }
  // A group norm only the tail reads runs as its statistics; the tail
  // applies x * scale + shift, reading the NHWC convolution output as it is.
  {
    const auto gn = ChannelsLastOption("level2", "04_conv2d_groupnorm_tanh_hardswish_residual");
    EXPECT_EQ(gn->detail.value("tail_group_norms", 0), 1);
    EXPECT_NE(gn->candidate.source.find(
                  "v12, v13 = _kopt_gn_affine(v5, v3, v4, 8, 1.0000000000000001e-05)"),
              std::string::npos)
        << gn->candidate.source;
    EXPECT_NE(gn->candidate.source.find("def _kopt_gn_affine(x, w, b, groups, eps):"),
              std::string::npos);
    EXPECT_EQ(gn->candidate.source.find("native_group_norm("), std::string::npos);
    EXPECT_NE(gn->candidate.source.find(
                  "_kopt_tail([_kopt_either(v5), v12.contiguous(), v13.contiguous()], [o0])"),
              std::string::npos)
        << gn->candidate.source;
    EXPECT_NE(gn->about.find("applies 1 group norm(s) as a per-channel scale and shift"),
              std::string::npos)
        << gn->about;
    const auto g =
        *OpGraphFromJson(ReadJsonFile(testing::SourceDir() / "tests" / "data" / "graphs" /
                                      "level2_04_conv2d_groupnorm_tanh_hardswish_residual.json"));
    const auto m = GroupNormsIntoTail(g, 2);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->folded, 1);
    EXPECT_EQ(m->tail_from, 2u);
    ASSERT_EQ(m->graph.nodes.size(), g.nodes.size() + 2);
    EXPECT_EQ(m->graph.nodes[1].base, "kopt_group_norm_affine");
    EXPECT_EQ(m->graph.Value(m->graph.nodes[1].out[0]).shape,
              (std::vector<long long>{32, 64, 1, 1}));
    EXPECT_EQ(m->graph.nodes[2].base, "mul");
    EXPECT_EQ(m->graph.nodes[3].base, "add");
    EXPECT_EQ(m->graph.nodes[3].out[0], g.nodes[1].out[0]);
    EXPECT_EQ(m->graph.Producer(g.nodes[1].out[0])->index, 3);
    // The fused kernel reads the convolution's output once for both uses.
    const FusionResult f = FuseTail(m->graph, m->tail_from);
    ASSERT_TRUE(f.kernel) << f.why_not;
    EXPECT_EQ(f.kernel->kind, "elementwise");
    EXPECT_EQ(f.kernel->inputs.size(), 3u);
    // Read by a node before the tail: the norm stays whole.
    EXPECT_FALSE(GroupNormsIntoTail(g, 3));
    // The NCHW hybrid folds it too.
    const Plan p = PlanFor("level2", "04_conv2d_groupnorm_tanh_hardswish_residual");
    bool hybrid = false;
    for (const PlanOption& o : p.options)
      if (o.space == "library+fused") {
        hybrid = true;
        EXPECT_EQ(o.detail.value("tail_group_norms", 0), 1);
        EXPECT_NE(o.candidate.source.find("_kopt_tail([v5.contiguous(), v12.contiguous(), "
                                          "v13.contiguous()]"),
                  std::string::npos)
            << o.candidate.source;
      }
    EXPECT_TRUE(hybrid);
  }
  // The small CNN's three conv -> ReLU -> max pool chains: kopt's NHWC
  // pool with the bias and ReLU after the max, the convolution without its
  // bias (knob POOL_KERNEL); else the ReLU swaps with the pool (POOL_FIRST).
  const auto cnn_option = ChannelsLastOption("level3", "05_small_cnn");
  const std::string cnn = cnn_option->candidate.source;
  EXPECT_EQ(cnn_option->detail.value("kernel_pools", 0), 3);
  EXPECT_NE(cnn.find("\nPOOL_KERNEL = 1  # kopt:knob POOL_KERNEL 1 {0,1} 3 max pool(s) over NHWC "
                     "values as kopt's kernel with 3 convolution bias(es) and 3 activation(s) "
                     "applied after the max"),
            std::string::npos)
      << cnn;
  EXPECT_NE(
      cnn.find("        if POOL_KERNEL:\n            _r = torch.ops.aten.convolution(_kopt_cl("
               "v0), _kopt_cl(v1), None, "),
      std::string::npos)
      << cnn;
  EXPECT_NE(cnn.find("        if POOL_KERNEL:\n            v12 = v11\n"), std::string::npos) << cnn;
  EXPECT_NE(cnn.find("v13 = _kopt_pool(v11, v2, (2, 2), (2, 2), (0, 0), False, 1)"),
            std::string::npos)
      << cnn;
  EXPECT_NE(cnn.find("\nPOOL_FIRST = 1  # kopt:knob POOL_FIRST 1 {0,1} 3 activation(s)"),
            std::string::npos);
  EXPECT_NE(cnn.find("            if POOL_FIRST:\n                v12 = v11\n"), std::string::npos)
      << cnn;
  EXPECT_NE(cnn.find("torch.ops.aten.relu(v13)"), std::string::npos) << cnn;
  // The flatten before the classifier reads NCHW order made by the transpose.
  EXPECT_NE(cnn.find("torch.ops.aten.reshape(_kopt_out(v21), [v21.shape[0], -1])"),
            std::string::npos)
      << cnn;
  // The pools' pattern: conv (bias) -> ReLU -> max pool, 2x2 stride 2.
  const auto pools = KernelPools(*OpGraphFromJson(ReadJsonFile(
      testing::SourceDir() / "tests" / "data" / "graphs" / "level3_05_small_cnn.json")));
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(pools[0].act_code, 1);
  EXPECT_TRUE(pools[0].conv && pools[0].act);
  EXPECT_EQ(pools[0].kh * 1000 + pools[0].sw * 10 + pools[0].ph, 2020);
  // No convolution, no attention, no GEMM + ReLU: no library replay (GELU
  // with erf is not cuBLASLt's tanh GELU).
  EXPECT_FALSE(ChannelsLastOption("level2", "01_linear_gelu_scale"));
}

TEST(Hybrid, AGemmsBiasAndReluGoIntoTheCublasLtEpilogue) {
  auto o = ChannelsLastOption("level3", "01_mlp");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->candidate.name, "01_mlp[library]");
  EXPECT_EQ(o->detail.value("lt_epilogues", 0), 2);
  const std::string& src = o->candidate.source;
  EXPECT_NE(src.find("LT_EPILOGUE = 1  # kopt:knob LT_EPILOGUE 1 {0,1} 2 GEMM(s)"),
            std::string::npos);
  EXPECT_NE(src.find("torch.ops.aten._addmm_activation("), std::string::npos) << src;
  // The small CNN's classifier too.
  const std::string cnn = ChannelsLastOption("level3", "05_small_cnn")->candidate.source;
  EXPECT_NE(cnn.find("LT_EPILOGUE = 1  # kopt:knob LT_EPILOGUE 1 {0,1} 1 GEMM(s)"),
            std::string::npos);
  // Without cuBLASLt in the contract, the MLP has nothing to rewrite.
  TaskBundle b;
  b.graph = ReadJsonFile(testing::SourceDir() / "tests" / "data" / "graphs" / "level3_01_mlp.json");
  b.floor_ms = 1;
  PlanInputs in;
  in.bundle = &b;
  in.task_stem = "01_mlp";
  in.task_source = "class Model: pass\n";
  in.contract.libraries = {"cublas", "cudnn"};
  for (const PlanOption& p : MakePlan(in).options) EXPECT_NE(p.space, "library");
}

TEST(Hybrid, WrittenOutAttentionBecomesOneFusedCall) {
  auto o = ChannelsLastOption("level3", "03_transformer_block");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->candidate.name, "03_transformer_block[library]");
  EXPECT_EQ(o->detail.value("attention", 0), 1);
  EXPECT_FALSE(o->detail.value("channels_last", true));
  const std::string& src = o->candidate.source;
  EXPECT_NE(src.find("SDPA = 1  # kopt:knob SDPA 1 {0,1} 1 attention region(s)"),
            std::string::npos);
  // q, k, v after their head transposes; causal; scale 1/sqrt(64).
  EXPECT_NE(src.find("v50 = _kopt_sdpa(v24, v26, v28, True, 0.125)"), std::string::npos) << src;
  EXPECT_EQ(src.find("CHANNELS_LAST"), std::string::npos);
  // The mask made inside the forward goes to the inputs' device, not the
  // capture's (meta).
  EXPECT_NE(src.find("torch.ops.aten.ones([1024, 1024], device=_kopt_dev"), std::string::npos);
  EXPECT_EQ(src.find("'meta'"), std::string::npos);
  const auto regions = AttentionRegions(*OpGraphFromJson(ReadJsonFile(
      testing::SourceDir() / "tests" / "data" / "graphs" / "level3_03_transformer_block.json")));
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].nodes.size(), 22u);  // nodes 12..33
  EXPECT_EQ(*regions[0].nodes.begin(), 12u);
  EXPECT_EQ(regions[0].last, 33u);
  // [B*T, 3C] -> [B, T, 3C] after the GEMM: B and T come from a value
  // with those leading dims, so another batch size works.
  EXPECT_TRUE(std::regex_search(
      src,
      std::regex(R"(torch\.ops\.aten\.view\(v18, \[v\d+\.shape\[0\], v\d+\.shape\[1\], -1\]\))")))
      << src;
  // Expands keep the dims they do not broadcast (-1).
  EXPECT_NE(src.find("torch.ops.aten.expand(v24, [-1, -1, -1, -1])"), std::string::npos);
}

/// conv -> ACT -> max_pool2d_with_indices, the pool's values returned (and
/// its indices too when `return_indices`).
OpGraph ConvActPool(const std::string& act, const Json& act_args, bool return_indices) {
  auto abi = [](int i, const char* role, const char* name) {
    Json s = {{"kind", "abi"}, {"index", i}, {"role", role}};
    if (*name) s["name"] = name;
    return s;
  };
  auto op = [](int node, int out) { return Json{{"kind", "op"}, {"node", node}, {"output", out}}; };
  Json v = Json::array();
  v.push_back({{"dtype", "float32"}, {"shape", {2, 4, 8, 8}}, {"source", abi(0, "input", "")}});
  v.push_back({{"dtype", "float32"}, {"shape", {8, 4, 3, 3}}, {"source", abi(1, "param", "w")}});
  v.push_back({{"dtype", "float32"}, {"shape", {2, 8, 6, 6}}, {"source", op(0, 0)}});
  v.push_back({{"dtype", "float32"}, {"shape", {2, 8, 6, 6}}, {"source", op(1, 0)}});
  v.push_back({{"dtype", "float32"}, {"shape", {2, 8, 3, 3}}, {"source", op(2, 0)}});
  v.push_back({{"dtype", "int64"}, {"shape", {2, 8, 3, 3}}, {"source", op(2, 1)}});
  Json args = Json::array({Json{{"v", 2}}});
  for (const Json& a : act_args) args.push_back(a);
  Json nodes = Json::array();
  nodes.push_back(
      {{"op", "aten::convolution"},
       {"args",
        {Json{{"v", 0}}, Json{{"v", 1}}, nullptr, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1}},
       {"in", {0, 1}},
       {"out", {2}}});
  nodes.push_back({{"op", "aten::" + act}, {"args", args}, {"in", {2}}, {"out", {3}}});
  nodes.push_back({{"op", "aten::max_pool2d_with_indices"},
                   {"args", {Json{{"v", 3}}, {2, 2}, {2, 2}}},
                   {"in", {3}},
                   {"out", {4, 5}}});
  Json outputs = return_indices ? Json::array({4, 5}) : Json::array({4});
  return *OpGraphFromJson(
      Json{{"version", 2}, {"values", v}, {"nodes", nodes}, {"outputs", outputs}});
}

TEST(Hybrid, OnlyANondecreasingActivationWithUnusedIndicesRunsAfterTheMaxPool) {
  auto pool_first = [](const OpGraph& g) {
    ReplayOptions ro;
    ro.channels_last = true;
    ro.pool_first = true;
    std::string why;
    auto src = ReplaySource(g, nullptr, 0, "class Model: pass\n", ro, &why);
    EXPECT_TRUE(src) << why;
    return src && src->find("\nPOOL_FIRST = 1") != std::string::npos;
  };
  EXPECT_TRUE(pool_first(ConvActPool("relu_", Json::array(), false)));
  EXPECT_TRUE(pool_first(ConvActPool("hardtanh", Json::array({0.0, 6.0}), false)));
  EXPECT_TRUE(pool_first(ConvActPool("leaky_relu", Json::array({0.2}), false)));
  EXPECT_TRUE(pool_first(ConvActPool("sigmoid", Json::array(), false)));
  // Not monotone, or a negative slope: max(f(x)) != f(max(x)).
  EXPECT_FALSE(pool_first(ConvActPool("gelu", Json::array(), false)));
  EXPECT_FALSE(pool_first(ConvActPool("silu", Json::array(), false)));
  EXPECT_FALSE(pool_first(ConvActPool("leaky_relu", Json::array({-0.5}), false)));
  // The indices are returned: ReLU's ties at zero would move them.
  EXPECT_FALSE(pool_first(ConvActPool("relu", Json::array(), true)));
}

TEST(Hybrid, TheLibraryReplayComputesWhatTheModelDoesAtEveryKnob) {
  const char* py = std::getenv("KOPT_PYTHON");
  const std::string python = py && *py ? py : "/usr/bin/python3";
  if (std::system((python + " -c 'import torch' > /dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no python with torch";
  const fs::path dir = testing::ScratchDir("channels-last-replay");
  fs::create_directories(dir / "stub" / "kopt");
  // The fused tail's stand-in writes zeros; the BatchNorm and pool kernels'
  // compute what their slots say from the inputs in the ABI's order (NHWC).
  std::ofstream(dir / "stub" / "kopt" / "__init__.py")
      << "import re, torch\n"
         "def load_cuda(src, *a, **k):\n"
         "    if '#define KOPT_RESIDUAL' in src:\n"
         "        slot = lambda n: int(re.search(r'(?m)^#define %s (-?\\d+)' % n, src).group(1))\n"
         "        aff, run, res, act = [slot('KOPT_' + n) for n in ('AFFINE', 'RUNNING', "
         "'RESIDUAL', "
         "'ACT')]\n"
         "        eps, mom = slot('KOPT_EPS_E12') * 1e-12, slot('KOPT_MOMENTUM_E12') * 1e-12\n"
         "        assert slot('KOPT_TRACKED') == 0\n"
         "        nchw = slot('KOPT_OUT_NCHW')\n"
         "        def bn(ins, outs):\n"
         "            x, y = ins[0], outs[0]\n"
         "            assert x.is_contiguous() and y.is_contiguous() and len(ins) == 1 + 2 * aff + "
         "2 "
         "* run + res\n"
         "            w, b = (ins[1], ins[2]) if aff else (None, None)\n"
         "            rm, rv = (ins[1 + 2 * aff], ins[2 + 2 * aff]) if run else (None, None)\n"
         "            z = torch.nn.functional.batch_norm(x.reshape(-1, x.shape[-1]), rm, rv, w, b, "
         "True, mom, eps).reshape(x.shape)\n"
         "            if res: z = z + ins[-1]\n"
         "            z = torch.relu(z) if act == 1 else z\n"
         "            y.copy_(z.permute(0, 3, 1, 2) if nchw else z)\n"
         "        return bn\n"
         "    if '#define KOPT_BIAS' in src and '#define KOPT_CEIL_MODE' in src:\n"
         "        slot = lambda n: int(re.search(r'(?m)^#define %s (-?\\d+)' % n, src).group(1))\n"
         "        k, s, p = [(slot('KOPT_' + a + 'H'), slot('KOPT_' + a + 'W')) for a in 'KSP']\n"
         "        bias, act, ceil = slot('KOPT_BIAS'), slot('KOPT_ACT'), slot('KOPT_CEIL_MODE')\n"
         "        def pool(ins, outs):\n"
         "            x, y = ins[0].permute(0, 3, 1, 2), outs[0]\n"
         "            assert ins[0].is_contiguous() and y.is_contiguous() and len(ins) == 1 + "
         "bias\n"
         "            z = torch.nn.functional.max_pool2d(x, k, s, p, 1, bool(ceil))\n"
         "            if bias: z = z + ins[1].view(1, -1, 1, 1)\n"
         "            z = torch.relu(z) if act == 1 else (torch.clamp(z, 0, 6) if act == 2 else "
         "z)\n"
         "            y.copy_(z.permute(0, 2, 3, 1))\n"
         "        return pool\n"
         "    def run(ins, outs):\n"
         "        for o in outs: o.zero_()\n"
         "    return run\n";
  // Same parameters; two calls (BatchNorm's running statistics move twice);
  // outputs NCHW-contiguous and equal to the Model's; then a weight changed
  // in place must reach the next call (a kept NHWC copy is remade).
  std::ofstream(dir / "check.py")
      << "import re, runpy, sys, torch\n"
         "src = open(sys.argv[1]).read()\n"
         "for kv in sys.argv[2:]:\n"
         "    k, v = kv.split('=')\n"
         "    src, n = re.subn(r'^%s = 1  # kopt:knob %s 1' % (k, k), '%s = %s  # kopt:knob %s %s' "
         "% "
         "(k, v, k, v), src, flags=re.M)\n"
         "    assert n == 1, k\n"
         "open(sys.argv[1] + '.set.py', 'w').write(src)\n"
         "m = runpy.run_path(sys.argv[1] + '.set.py')\n"
         "torch.manual_seed(0); new = m['ModelNew'](*m['get_init_inputs']())\n"
         "torch.manual_seed(0); ref = m['Model'](*m['get_init_inputs']())\n"
         "torch.manual_seed(1)\n"
         "x = [t[:1] if t.dim() > 1 else t for t in m['get_inputs']()]\n"
         "def same(a, b, what):\n"
         "    assert a.shape == b.shape, (what, a.shape, b.shape)\n"
         "    assert torch.allclose(a, b, rtol=1e-3, atol=1e-4), (what, (a - "
         "b).abs().max().item())\n"
         "zero = 'FUSED_TAIL=1' in sys.argv\n"
         "with torch.no_grad():\n"
         "    for call in range(2):\n"
         "        y = new(*x); r = ref(*x)\n"
         "        assert y.is_contiguous(), 'the output is not NCHW-contiguous'\n"
         "        same(y, torch.zeros_like(r) if zero else r, 'output')\n"
         "        a, b = new.state_dict(), ref.state_dict()\n"
         "        for k in a:\n"
         "            same(a[k].float(), b[k].float(), k)\n"
         "    w = [p for p in new.parameters() if p.dim() > 1][0]\n"
         "    w.mul_(-2)\n"
         "    [p for p in ref.parameters() if p.dim() > 1][0].mul_(-2)\n"
         "    if not zero: same(new(*x), ref(*x), 'output after a weight changed')\n"
         "print('ok')\n";
  int n = 0;
  for (const auto& [level, stem, tail] : kReplayTasks) {
    for (bool reuse : {false, true}) {
      auto o = ChannelsLastOption(level, stem, reuse);
      ASSERT_TRUE(o) << stem;
      const fs::path file = dir / (stem + (reuse ? "_reuse" : "") + ".py");
      std::ofstream(file) << o->candidate.source;
      // The defaults (no knob changed), then each knob turned back.
      const std::string& src = o->candidate.source;
      auto has = [&](const char* knob) {
        return src.find(fmt::format("\n{} = 1  # kopt:knob", knob)) != std::string::npos;
      };
      std::vector<std::string> settings = {tail ? "FUSED_TAIL=0" : ""};
      if (tail) settings.push_back("FUSED_TAIL=1");
      if (has("CHANNELS_LAST"))
        settings.push_back(tail ? "CHANNELS_LAST=0 FUSED_TAIL=0" : "CHANNELS_LAST=0");
      for (const char* knob :
           {"POOL_FIRST", "SDPA", "LT_EPILOGUE", "LAYOUT_KERNEL", "BN_KERNEL", "POOL_KERNEL"})
        if (has(knob)) settings.push_back(fmt::format("{}=0{}", knob, tail ? " FUSED_TAIL=0" : ""));
      if (reuse) settings.resize(1);
      for (const std::string& set : settings) {
        const fs::path log = dir / fmt::format("{}.log", n++);
        const std::string cmd = "cd " + dir.string() + " && PYTHONPATH=" + (dir / "stub").string() +
                                " " + python + " check.py " + file.string() + " " + set + " > " +
                                log.string() + " 2>&1";
        EXPECT_EQ(std::system(cmd.c_str()), 0)
            << stem << " " << set << (reuse ? " (weights kept)" : "") << "\n"
            << ReadTextFile(log);
      }
    }
  }
}

TEST(Hybrid, OnHopperTheForwardsFp32GemmsRunAsKoptsKernelWithTheirActivation) {
  // The MLP: three addmm, two with a ReLU; the transformer: four linears,
  // fc1 with an exact GELU; linear + tail tasks of level 2.
  const auto mlp = ChannelsLastOption("level3", "01_mlp", false, 9);
  ASSERT_TRUE(mlp);
  EXPECT_EQ(mlp->detail.value("kernel_gemms", 0), 3);
  const std::string& src = mlp->candidate.source;
  EXPECT_NE(src.find("GEMM_3XTF32 = 1  # kopt:knob GEMM_3XTF32 1 {0,1,2} 3 GEMM(s)"),
            std::string::npos);
  EXPECT_NE(src.find("_KOPT_GEMM_SOURCE = r\"\"\""), std::string::npos);
  // Its knobs under names of their own (the replay may embed other kernels).
  EXPECT_NE(src.find("constexpr int GEMM_CONSUMERS = 2;"), std::string::npos);
  std::size_t calls = 0;
  for (std::size_t at = src.find("= _kopt_gemm(v"); at != std::string::npos;
       at = src.find("= _kopt_gemm(v", at + 1))
    ++calls;
  EXPECT_EQ(calls, 3u);
  EXPECT_NE(src.find(", 1)\n"), std::string::npos);  // ReLU in the epilogue
  const auto block = ChannelsLastOption("level3", "03_transformer_block", false, 9);
  ASSERT_TRUE(block);
  EXPECT_EQ(block->detail.value("kernel_gemms", 0), 4);
  EXPECT_NE(block->candidate.source.find(", 2)\n"), std::string::npos);  // GELU (erf)
  // An activation inside the fused tail stays the tail's: level2/01's GELU
  // is not also put into the GEMM's epilogue (it would be applied twice).
  const auto lin = ChannelsLastOption("level2", "01_linear_gelu_scale", false, 9);
  ASSERT_TRUE(lin);
  const std::string& ls = lin->candidate.source;
  ASSERT_NE(ls.find("\nFUSED_TAIL = 1"), std::string::npos);
  EXPECT_NE(ls.find("= _kopt_gemm(v"), std::string::npos);
  EXPECT_EQ(ls.find(", 2)\n"), std::string::npos) << ls;
  // Not offered off Hopper (the kernel is sm_90a), nor where no GEMM is fp32 2-D.
  EXPECT_EQ(ChannelsLastOption("level3", "01_mlp", false, 8)->detail.value("kernel_gemms", 0), 0);
  EXPECT_EQ(ChannelsLastOption("level3", "02_resnet_basic_block", false, 9)
                ->detail.value("kernel_gemms", 0),
            0);
}

TEST(Hybrid, BatchNormsRunAsKoptsChannelsLastKernelWithWhatFollowsThem) {
  const OpGraph g = *OpGraphFromJson(ReadJsonFile(testing::SourceDir() / "tests" / "data" /
                                                  "graphs" / "level3_02_resnet_basic_block.json"));
  // bn1 -> ReLU; bn2 -> + identity (the block's input) -> ReLU.
  const auto bns = KernelBatchNorms(g);
  ASSERT_EQ(bns.size(), 2u);
  EXPECT_FALSE(bns[0].add);
  ASSERT_TRUE(bns[0].act);
  EXPECT_EQ(g.nodes[*bns[0].act].base, "relu");
  ASSERT_TRUE(bns[1].add && bns[1].act);
  EXPECT_EQ(bns[1].residual, 0);
  // The plan's replay passes over the fused tail (add -> ReLU): both go
  // into bn2's kernel, which reads the block's input as its residual.
  const auto o = ChannelsLastOption("level3", "02_resnet_basic_block");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->detail.value("kernel_batch_norms", 0), 2);
  EXPECT_TRUE(o->detail.value("tail_ops", Json::array()).empty());
  const std::string& src = o->candidate.source;
  EXPECT_NE(src.find("\nBN_KERNEL = 1  # kopt:knob BN_KERNEL 1 {0,1} 2 BatchNorm(s)"),
            std::string::npos);
  EXPECT_NE(src.find("#define KOPT_RESIDUAL"), std::string::npos);
  EXPECT_NE(src.find(", 1, None)\n"), std::string::npos) << src;  // bn1 with its ReLU
  // bn2, + x, ReLU: the block's result, written in NCHW order by the kernel.
  EXPECT_NE(src.find(", 1, v0, nchw=1)\n"), std::string::npos) << src;
  EXPECT_NE(src.find("if BN_KERNEL:\n            v26 = v23\n"), std::string::npos) << src;
  // With a tail that starts at the add, the add and ReLU stay the tail's.
  ReplayOptions ro;
  ro.channels_last = true;
  ro.bn_source = "#define KOPT_RESIDUAL 0\n";
  FusedKernel k;
  k.kind = "elementwise";
  k.inputs = {23, 0};
  k.shape_input = 0;
  std::string why;
  const auto tailed = ReplaySource(g, &k, 9, "class Model: pass\n", ro, &why);
  ASSERT_TRUE(tailed) << why;
  EXPECT_NE(tailed->find(", 0, None)\n"), std::string::npos) << *tailed;
  EXPECT_EQ(tailed->find(", 1, v0)\n"), std::string::npos) << *tailed;
  // None where the forward has no BatchNorm.
  EXPECT_EQ(ChannelsLastOption("level1", "26_conv2d")->detail.value("kernel_batch_norms", 0), 0);
}

TEST(Hybrid, TheGemmKernelsReplayComputesWhatTheModelDoesOnTheCpu) {
  const char* py = std::getenv("KOPT_PYTHON");
  const std::string python = py && *py ? py : "/usr/bin/python3";
  if (std::system((python + " -c 'import torch' > /dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no python with torch";
  const fs::path dir = testing::ScratchDir("gemm-replay");
  fs::create_directories(dir / "stub" / "kopt");
  // The kernel's stand-in reads the slots the replay set in the source, so
  // the helper's layout test (W.t() or a [K, N] matrix), bias and
  // activation code are what is checked.
  std::ofstream(dir / "stub" / "kopt" / "__init__.py")
      << "import re, torch\n"
         "def load_cuda(src, *a, **k):\n"
         "    if '#define KOPT_TRANS_B' not in src:  # a fused tail: not run here\n"
         "        return lambda ins, outs: None\n"
         "    slot = lambda n: int(re.search(r'(?m)^#define %s (-?\\d+)' % n, src).group(1))\n"
         "    tb, bias, act = slot('KOPT_TRANS_B'), slot('KOPT_BIAS'), slot('KOPT_EPILOGUE')\n"
         "    def run(ins, outs):\n"
         "        x, w = ins[0], ins[1]\n"
         "        assert x.is_contiguous() and w.is_contiguous()\n"
         "        y = x @ (w.t() if tb else w)\n"
         "        if bias: y = y + ins[2]\n"
         "        if act == 1: y = torch.relu(y)\n"
         "        if act in (2, 3): y = torch.nn.functional.gelu(y, approximate='tanh' if act == 3 "
         "else 'none')\n"
         "        outs[0].copy_(y)\n"
         "    return run\n";
  std::ofstream(dir / "check.py")
      << "import re, runpy, sys, torch\n"
         "src = open(sys.argv[1]).read()\n"
         "for kv in sys.argv[2:]:\n"
         "    k, v = kv.split('=')\n"
         "    src, n = re.subn(r'^%s = 1  # kopt:knob' % k, '%s = %s  # kopt:knob' % (k, v), src, "
         "flags=re.M)\n"
         "    assert n == 1, k\n"
         "open(sys.argv[1] + '.set.py', 'w').write(src)\n"
         "m = runpy.run_path(sys.argv[1] + '.set.py')\n"
         "torch.manual_seed(0); new = m['ModelNew'](*m['get_init_inputs']())\n"
         "torch.manual_seed(0); ref = m['Model'](*m['get_init_inputs']())\n"
         "torch.manual_seed(1)\n"
         "x = [t[:2] if t.dim() > 1 else t for t in m['get_inputs']()]\n"
         "with torch.no_grad():\n"
         "    y, r = new(*x), ref(*x)\n"
         "assert y.shape == r.shape, (y.shape, r.shape)\n"
         "assert torch.allclose(y, r, rtol=1e-4, atol=1e-5), (y - r).abs().max().item()\n"
         "print('ok')\n";
  int n = 0;
  for (const auto& [level, stem] : std::vector<std::pair<std::string, std::string>>{
           {"level3", "01_mlp"},
           {"level3", "03_transformer_block"},
           {"level2", "01_linear_gelu_scale"},
           {"level2", "03_linear_dropout_mish_logsoftmax"},
           {"level2", "06_linear_batchnorm_relu_scale"}}) {
    auto o = ChannelsLastOption(level, stem, false, 9);
    ASSERT_TRUE(o) << stem;
    ASSERT_GT(o->detail.value("kernel_gemms", 0), 0) << stem;
    const fs::path file = dir / (stem + ".py");
    std::ofstream(file) << o->candidate.source;
    const bool tail = o->candidate.source.find("\nFUSED_TAIL = 1") != std::string::npos;
    // The stub runs no BatchNorm kernel (TheLibraryReplay... and the host
    // emulation check that one).
    const bool bn = o->candidate.source.find("\nBN_KERNEL = 1") != std::string::npos;
    // Every GEMM through the kernel (2), the default (1: these GEMMs, cut
    // to two rows, are small enough to stay PyTorch's, activation included),
    // or none (0); the replayed tail where there is one (the stub does not
    // run fused kernels).
    for (const char* set : {"GEMM_3XTF32=2", "GEMM_3XTF32=1", "GEMM_3XTF32=0"}) {
      const fs::path log = dir / fmt::format("{}.log", n++);
      const std::string cmd = "cd " + dir.string() + " && PYTHONPATH=" + (dir / "stub").string() +
                              " " + python + " check.py " + file.string() + " " + set +
                              (tail ? " FUSED_TAIL=0" : "") + (bn ? " BN_KERNEL=0" : "") + " > " +
                              log.string() + " 2>&1";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << stem << " " << set << "\n" << ReadTextFile(log);
    }
  }
}

TEST(Hybrid, TheFusedTailsCompileForSm90a) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  std::vector<BuildRequest> requests;
  for (const std::string& stem : kLevel2) {
    const std::string src = LibraryOption("level2", stem)->option.candidate.source;
    const std::size_t b = src.find("CUDA_SOURCE = r\"\"\"") + 18;
    requests.push_back({src.substr(b, src.find("\"\"\"", b) - b), stem, {}});
  }
  const auto results = testing::BuildForSm90a("hybrid-nvcc", requests);
  for (std::size_t i = 0; i < results.size(); ++i)
    EXPECT_TRUE(results[i].ok) << requests[i].name << "\n" << results[i].log;
}

}  // namespace
}  // namespace kopt
