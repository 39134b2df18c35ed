// The planner on the suite's recorded op graphs: which template each task's
// pattern matches and with which slots, and that every option it offers
// compiles for sm_90a.
#include "plan/planner.h"

#include <gtest/gtest.h>

#include "core/json.h"
#include "plan/sm90a_builds_for_test.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

TaskBundle BundleOf(const std::string& name) {
  TaskBundle b;
  b.graph = ReadJsonFile(testing::SourceDir() / "tests" / "data" / "graphs" / (name + ".json"));
  b.floor_ms = 1.0;
  return b;
}

Plan PlanOf(const std::string& name) {
  static const auto templates = LoadTemplates(testing::SourceDir() / "kernels");
  TaskBundle b = BundleOf(name);
  PlanInputs in;
  in.bundle = &b;
  in.task_stem = name;
  in.templates = templates;
  return MakePlan(in);
}

/// The slots of the option that instantiates `template_id`, or null.
const Json* Slots(const Plan& p, const std::string& template_id) {
  for (const PlanOption& o : p.options)
    if (o.detail.value("template", "") == template_id) return &o.detail.at("slots");
  return nullptr;
}

TEST(Templates, SlotsAreSetOnTheirDefineLinesOnly) {
  const std::string src =
      "#define KOPT_DIM -1  // slot: dim\n#define KOPT_OP 0 // slot: op\nint KOPT_DIM2 = 3;\n";
  EXPECT_EQ(
      SetSlots(src, {{"KOPT_DIM", 2}}),
      "#define KOPT_DIM 2  // slot: dim\n#define KOPT_OP 0 // slot: op\nint KOPT_DIM2 = 3;\n");
  EXPECT_EQ(SlotValues(src).at("KOPT_OP"), "0");
  EXPECT_THROW(SetSlots(src, {{"KOPT_NOPE", 1}}), std::exception);
}

TEST(Planner, MatchesEachTemplateToItsPatternWithSlotsFromTheArgs) {
  const auto templates = LoadTemplates(testing::SourceDir() / "kernels");
  ASSERT_GE(templates.size(), 4u);
  auto expect = [](const std::string& task, const std::string& tmpl, const Json& want) {
    const Plan p = PlanOf(task);
    const Json* s = Slots(p, tmpl);
    ASSERT_NE(s, nullptr) << task << " should match " << tmpl;
    for (const auto& [k, v] : want.items()) EXPECT_EQ(s->at(k), v) << task << " " << k;
  };
  expect("level1_16_cumsum", "scan/scan_lastdim", {{"KOPT_REVERSE", 0}, {"KOPT_EXCLUSIVE", 0}});
  expect("level1_17_reverse_cumsum", "scan/scan_lastdim",
         {{"KOPT_REVERSE", 1}, {"KOPT_EXCLUSIVE", 0}});
  expect("level1_18_exclusive_cumsum", "scan/scan_lastdim",
         {{"KOPT_REVERSE", 0}, {"KOPT_EXCLUSIVE", 1}});
  expect("level1_10_sum_dim", "reduce/reduce_dim", {{"KOPT_DIM", 1}, {"KOPT_OP", 0}});
  expect("level1_11_mean_dim", "reduce/reduce_dim", {{"KOPT_DIM", 1}, {"KOPT_OP", 1}});
  expect("level1_12_max_dim", "reduce/reduce_dim", {{"KOPT_DIM", 0}, {"KOPT_OP", 2}});
  expect("level1_13_argmax", "reduce/reduce_dim", {{"KOPT_DIM", 1}, {"KOPT_OP", 6}});
  expect("level1_08_groupnorm", "norm/group_norm",
         {{"KOPT_GROUPS", 32}, {"KOPT_EPS_E12", 10000000}});
  expect("level1_09_batchnorm2d", "norm/batch_norm",
         {{"KOPT_AFFINE", 1}, {"KOPT_EPS_E12", 10000000}, {"KOPT_MOMENTUM_E12", 100000000000LL}});
  expect("level1_20_cross_entropy", "loss/cross_entropy",
         {{"KOPT_REDUCTION", 1}, {"KOPT_IGNORE_INDEX", -100}});
  expect("level1_14_maxpool2d", "pool/pool2d",
         {{"KOPT_MAX", 1}, {"KOPT_KH", 3}, {"KOPT_SH", 2}, {"KOPT_PH", 1}, {"KOPT_CEIL_MODE", 0}});
  expect("level1_15_avgpool2d", "pool/pool2d",
         {{"KOPT_MAX", 0}, {"KOPT_KW", 3}, {"KOPT_COUNT_INCLUDE_PAD", 1}});
  expect("level1_27_depthwise_conv2d", "conv/depthwise_conv2d",
         {{"KOPT_KH", 3},
          {"KOPT_KW", 3},
          {"KOPT_SH", 1},
          {"KOPT_SW", 1},
          {"KOPT_PH", 1},
          {"KOPT_PW", 1},
          {"KOPT_DH", 1},
          {"KOPT_DW", 1},
          {"KOPT_MULT", 1},
          {"KOPT_BIAS", 0},
          {"KOPT_EPILOGUE", 0}});
  // A dense convolution (groups 1, 64 input channels) is not depthwise.
  EXPECT_EQ(Slots(PlanOf("level1_26_conv2d"), "conv/depthwise_conv2d"), nullptr);
  EXPECT_EQ(Slots(PlanOf("level2_02_conv2d_relu_biasadd"), "conv/depthwise_conv2d"), nullptr);
  expect("level1_21_matmul_square", "gemm/gemm_3xtf32", {{"KOPT_TRANS_B", 0}, {"KOPT_BATCHED", 0}});
  expect("level1_22_bmm", "gemm/gemm_3xtf32", {{"KOPT_BATCHED", 1}});
  expect("level1_23_matmul_transposed_b", "gemm/gemm_3xtf32", {{"KOPT_TRANS_B", 1}});
  expect("level2_05_linear_sum_scale_gelu", "gemm/linear_reduce",
         {{"KOPT_TRANS_B", 1},
          {"KOPT_BIAS", 1},
          {"KOPT_MEAN", 0},
          {"KOPT_PRE_SCALE_X1000", 20},
          {"KOPT_EPILOGUE", 2},
          {"KOPT_POST_SCALE_X1000", 1000}});
  // GELU after the scale: the GEMM template (scale after its activation) is not offered.
  EXPECT_EQ(Slots(PlanOf("level2_05_linear_sum_scale_gelu"), "gemm/gemm_3xtf32"), nullptr);
  EXPECT_EQ(PlanOf("level2_05_linear_sum_scale_gelu").options.at(0).detail.value("template", ""),
            "gemm/linear_reduce");
  expect("level2_01_linear_gelu_scale", "gemm/gemm_3xtf32",
         {{"KOPT_TRANS_B", 1},
          {"KOPT_BIAS", 1},
          {"KOPT_EPILOGUE", 2},
          {"KOPT_OUT_SCALE_X1000", 1500}});
}

TEST(Planner, OffersTheWgmmaGemmFirstOnComputeCapability90Only) {
  static const auto templates = LoadTemplates(testing::SourceDir() / "kernels");
  auto plan = [&](int major, int minor) {
    TaskBundle b = BundleOf("level2_01_linear_gelu_scale");
    b.device.cc_major = major;
    b.device.cc_minor = minor;
    PlanInputs in;
    in.bundle = &b;
    in.task_stem = "level2_01_linear_gelu_scale";
    in.templates = templates;
    return MakePlan(in);
  };
  auto index_of = [](const Plan& p, const std::string& id) {
    for (std::size_t i = 0; i < p.options.size(); ++i)
      if (p.options[i].detail.value("template", "") == id) return static_cast<int>(i);
    return -1;
  };
  const Plan hopper = plan(9, 0);
  const int wgmma = index_of(hopper, "gemm/gemm_wgmma_3xtf32");
  const int mma = index_of(hopper, "gemm/gemm_3xtf32");
  ASSERT_GE(wgmma, 0);
  ASSERT_GE(mma, 0);
  EXPECT_LT(wgmma, mma);
  EXPECT_EQ(hopper.options[wgmma].detail.at("slots"), hopper.options[mma].detail.at("slots"));
  // wgmma exists on 9.0 alone (sm_90a): not on Ampere, Blackwell or an unknown device.
  for (auto [major, minor] : {std::pair{8, 0}, std::pair{10, 0}, std::pair{0, 0}}) {
    const Plan other = plan(major, minor);
    EXPECT_EQ(index_of(other, "gemm/gemm_wgmma_3xtf32"), -1) << major << "." << minor;
    EXPECT_GE(index_of(other, "gemm/gemm_3xtf32"), 0);
  }
}

TEST(Planner, OffersTheFusedKernelFirstAndSaysWhyNotOtherwise) {
  const Plan softmax = PlanOf("level1_04_softmax");
  ASSERT_FALSE(softmax.options.empty());
  EXPECT_EQ(softmax.options[0].space, "fused");
  EXPECT_GT(softmax.options[0].est_ms, 0);
  // A reduction over dim 1: the reduce template first, the column kernel
  // (a thread per line) after it.
  const Plan sum = PlanOf("level1_10_sum_dim");
  ASSERT_GE(sum.options.size(), 2u);
  EXPECT_EQ(sum.options[0].detail.value("template", ""), "reduce/reduce_dim");
  bool column = false;
  for (std::size_t i = 1; i < sum.options.size(); ++i)
    column = column || sum.options[i].detail.value("fused_kind", "") == "column";
  EXPECT_TRUE(column);
  const Plan conv = PlanOf("level1_26_conv2d");
  EXPECT_TRUE(conv.options.empty());
  bool said = false;
  for (const auto& n : conv.notes) said = said || n.find("matrix op") != std::string::npos;
  EXPECT_TRUE(said);
  // A chain the GEMM template cannot take whole (dropout, mish, log-softmax) gets no GEMM option.
  EXPECT_EQ(Slots(PlanOf("level2_03_linear_dropout_mish_logsoftmax"), "gemm/gemm_3xtf32"), nullptr);
}

/// diag(a) @ B @ diag(c) as captured: `diag` as torch 1.x records it,
/// `diag_embed` (offset 0, dims -2 and -1) as torch 2.x does.
Json DiagGraph(const std::string& diag) {
  auto node = [&](std::vector<int> in, int out, std::vector<long long> in_shape) {
    Json args = Json::array();
    for (int v : in) args.push_back(Json{{"v", v}});
    if (diag == "diag_embed" && in.size() == 1) {
      args.push_back(0);
      args.push_back(-2);
      args.push_back(-1);
    }
    return Json{{"op", in.size() == 1 ? "aten::" + diag : std::string("aten::mm")},
                {"args", args},
                {"in", in},
                {"out", {out}},
                {"in_shapes", {in_shape}}};
  };
  auto abi = [](std::vector<long long> shape, int index) {
    return Json{{"dtype", "float32"},
                {"shape", shape},
                {"source", {{"kind", "abi"}, {"role", "input"}, {"index", index}}}};
  };
  auto made = [](std::vector<long long> shape, int node) {
    return Json{{"dtype", "float32"},
                {"shape", shape},
                {"source", {{"kind", "op"}, {"node", node}, {"output", 0}}}};
  };
  return Json{{"version", 2},
              {"nodes",
               {node({0}, 3, {37}), node({3, 1}, 4, {37, 37}), node({2}, 5, {53}),
                node({4, 5}, 6, {37, 53})}},
              {"values",
               {abi({37}, 0), abi({37, 53}, 1), abi({53}, 2), made({37, 37}, 0), made({37, 53}, 1),
                made({53, 53}, 2), made({37, 53}, 3)}},
              {"outputs", {6}}};
}

TEST(Planner, ProductsByADiagonalMatrixBecomeOneElementwiseKernel) {
  static const auto templates = LoadTemplates(testing::SourceDir() / "kernels");
  for (const std::string diag : {"diag", "diag_embed"}) {
    const auto g = OpGraphFromJson(DiagGraph(diag));
    ASSERT_TRUE(g);
    const auto r = DiagonalProductsAsScales(*g);
    ASSERT_TRUE(r) << diag;
    // Rows of B scaled by a viewed [37, 1], then columns by c viewed [1, 53].
    EXPECT_EQ(r->nodes[0].base, "view");
    EXPECT_EQ(r->Value(r->nodes[0].out[0]).shape, (std::vector<long long>{37, 1}));
    EXPECT_EQ(r->nodes[1].base, "mul");
    EXPECT_EQ(r->Value(r->nodes[2].out[0]).shape, (std::vector<long long>{1, 53}));
    EXPECT_EQ(r->nodes[3].base, "mul");
    TaskBundle b;
    b.graph = DiagGraph(diag);
    b.floor_ms = 1.0;
    b.hard_floor_ms = 0.01;
    PlanInputs in;
    in.bundle = &b;
    in.task_stem = "diag_scale";
    in.templates = templates;
    const Plan p = MakePlan(in);
    ASSERT_FALSE(p.options.empty()) << diag;
    EXPECT_EQ(p.options[0].candidate.name, "diag_scale[diag-scale]");
    EXPECT_EQ(p.options[0].detail.value("fused_kind", ""), "elementwise");
    EXPECT_TRUE(p.options[0].detail.value("algebraic", false));
    EXPECT_NEAR(p.options[0].est_ms, 0.013, 1e-9);
  }
  // An off-diagonal or a diag read twice stays a GEMM.
  Json off = DiagGraph("diag_embed");
  off["nodes"][0]["args"][1] = 1;
  off["nodes"][2]["args"][1] = 1;
  EXPECT_FALSE(DiagonalProductsAsScales(*OpGraphFromJson(off)));
  Json twice = DiagGraph("diag");
  twice["outputs"] = {3, 6};
  const auto r = DiagonalProductsAsScales(*OpGraphFromJson(twice));
  ASSERT_TRUE(r);  // the second product still qualifies
  EXPECT_EQ(r->nodes[1].base, "mm");
  EXPECT_EQ(r->nodes[3].base, "mul");
}

TEST(Planner, OffersACudaGraphReplayOnlyWhenTheReferenceIsLaunchBoundAndStateless) {
  static const auto templates = LoadTemplates(testing::SourceDir() / "kernels");
  auto plan = [&](const std::string& graph, const std::string& task, double eager, double busy,
                  const std::string& training) {
    TaskBundle b = BundleOf(graph);
    b.eager_ms = SampleSummary{.n = 9, .median = eager};
    b.kernels = {{"gemm", 3, busy * 0.8}, {"relu", 3, busy * 0.2}};
    PlanInputs in;
    in.bundle = &b;
    in.task_stem = graph;
    in.task_source = ReadTextFile(testing::SourceDir() / "tasks" / task);
    in.contract.training = training;
    in.templates = templates;
    return MakePlan(in);
  };
  auto graphed = [](const Plan& p) {
    std::vector<const PlanOption*> out;
    for (const PlanOption& o : p.options)
      if (o.space == "cuda-graph") out.push_back(&o);
    return out;
  };
  auto said = [](const Plan& p, const std::string& what) {
    for (const auto& n : p.notes)
      if (n.find(what) != std::string::npos) return true;
    return false;
  };
  // Six launches, the GPU busy 0.1 of 0.5 ms: a replay leads the plan, its
  // estimate the busy time plus a stage latency per launch.
  const Plan idle = plan("level3_01_mlp", "level3/01_mlp.py", 0.5, 0.1, "inference");
  // Two: over the reference, and over the library replay (bias + ReLU in
  // cuBLASLt's epilogue), which subclasses that replay's ModelNew.
  const auto g = graphed(idle);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(idle.options.front().space, "cuda-graph");
  EXPECT_EQ(g[0]->detail.value("over", ""), "library");
  EXPECT_NE(g[0]->candidate.source.find("_KoptEager = ModelNew"), std::string::npos);
  EXPECT_EQ(g[1]->detail.value("over", ""), "reference");
  EXPECT_NEAR(g[1]->est_ms, 0.1 + 6 * kStageLatencyMs, 1e-9);
  EXPECT_EQ(g[1]->candidate.kind, CandidateKind::kHybrid);
  const std::string& src = g[1]->candidate.source;
  EXPECT_NE(src.find("_KoptEager = Model"), std::string::npos);
  EXPECT_NE(src.find("class ModelNew(_KoptEager):"), std::string::npos);
  EXPECT_NE(src.find("class Model(nn.Module)"), std::string::npos);  // the task itself
  // Busy 95% of the call: nothing to gain.
  const Plan busy = plan("level3_01_mlp", "level3/01_mlp.py", 0.5, 0.475, "inference");
  EXPECT_TRUE(graphed(busy).empty());
  EXPECT_TRUE(said(busy, "not launch-bound"));
  // A replay would repeat BatchNorm's running-statistics update.
  const Plan bn = plan("level3_02_resnet_basic_block", "level3/02_resnet_basic_block.py", 0.5, 0.1,
                       "batch statistics (BatchNorm in training mode ...)");
  EXPECT_TRUE(graphed(bn).empty());
  EXPECT_TRUE(said(bn, "running buffers"));
  // A level-2 chain also gets the replay of its library+fused hybrid.
  const Plan l2 = plan("level2_05_linear_sum_scale_gelu", "level2/05_linear_sum_scale_gelu.py", 0.5,
                       0.1, "inference");
  bool over_hybrid = false;
  for (const PlanOption* o : graphed(l2))
    over_hybrid =
        over_hybrid || (o->detail.value("over", "") == "library+fused" &&
                        o->candidate.source.find("_KoptEager = ModelNew") != std::string::npos);
  EXPECT_TRUE(over_hybrid);
}

TEST(Planner, EveryOptionCompilesForSm90a) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  std::vector<BuildRequest> requests;
  for (const auto& e : fs::directory_iterator(testing::SourceDir() / "tests" / "data" / "graphs")) {
    if (e.path().extension() != ".json") continue;
    for (const PlanOption& o : PlanOf(e.path().stem().string()).options)
      if (o.space == "template") requests.push_back({o.candidate.source, o.candidate.name, {}});
  }
  ASSERT_GE(requests.size(), 12u);
  const auto results = testing::BuildForSm90a("plan-nvcc", requests);
  for (std::size_t i = 0; i < results.size(); ++i)
    EXPECT_TRUE(results[i].ok) << requests[i].name << "\n" << results[i].log;
}

}  // namespace
}  // namespace kopt
