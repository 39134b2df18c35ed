// Contract inference on the suite's recorded graphs: what each says about
// pre-transformed weights and training-mode semantics, and that a contract
// file's word wins.
#include "plan/contract_inference.h"

#include <gtest/gtest.h>

#include "core/json.h"
#include "plan/planner.h"
#include "testing/paths.h"

namespace kopt {
namespace {

std::optional<OpGraph> GraphOf(const std::string& name) {
  return OpGraphFromJson(
      ReadJsonFile(testing::SourceDir() / "tests" / "data" / "graphs" / (name + ".json")));
}

TEST(ContractInference, ReadOnlyWeightsMayBePreTransformed) {
  Contract c;
  InferContract(GraphOf("level2_01_linear_gelu_scale"), TaskBundle{}, &c);
  ASSERT_TRUE(c.pre_transform_weights.has_value());
  EXPECT_TRUE(*c.pre_transform_weights);
  EXPECT_EQ(c.training, "inference");
  ASSERT_EQ(c.inferred.size(), 2u);
  EXPECT_NE(c.inferred[0].find("no op of the forward writes"), std::string::npos);
}

TEST(ContractInference, BatchNormInTrainingModeMeansBatchStatisticsAndStateWrites) {
  Contract c;
  InferContract(GraphOf("level2_06_linear_batchnorm_relu_scale"), TaskBundle{}, &c);
  ASSERT_TRUE(c.pre_transform_weights.has_value());
  EXPECT_FALSE(*c.pre_transform_weights);
  EXPECT_NE(c.inferred[0].find("writes its state"), std::string::npos) << c.inferred[0];
  EXPECT_EQ(c.training.rfind("batch statistics", 0), 0u) << c.training;
}

TEST(ContractInference, AContractFileWinsAndNoGraphInfersNothing) {
  Contract c;
  c.pre_transform_weights = false;
  c.training = "as the file says";
  InferContract(GraphOf("level2_01_linear_gelu_scale"), TaskBundle{}, &c);
  EXPECT_FALSE(*c.pre_transform_weights);
  EXPECT_EQ(c.training, "as the file says");
  EXPECT_TRUE(c.inferred.empty());
  Contract none;
  InferContract(std::nullopt, TaskBundle{}, &none);
  EXPECT_FALSE(none.pre_transform_weights.has_value());
  ASSERT_EQ(none.inferred.size(), 1u);
}

TEST(ContractInference, TheInferencesTravelWithTheContractsJson) {
  Contract c;
  InferContract(GraphOf("level2_06_linear_batchnorm_relu_scale"), TaskBundle{}, &c);
  c.libraries = {"cublas"};
  const Contract back = ContractFromJson(ToJson(c), "test");
  EXPECT_EQ(back.pre_transform_weights, c.pre_transform_weights);
  EXPECT_EQ(back.training, c.training);
  EXPECT_EQ(back.inferred, c.inferred);
  EXPECT_EQ(back.libraries, std::vector<std::string>{"cublas"});
  EXPECT_NE(DescribeContract(back).find("libraries: cublas"), std::string::npos);
  EXPECT_THROW(ContractFromJson(Json{{"libraries", {"mkl"}}}, "test"), std::exception);
}

TEST(ContractInference, ThePlanHonoursTheContract) {
  TaskBundle b;
  b.graph = ReadJsonFile(testing::SourceDir() / "tests" / "data" / "graphs" /
                         "level2_02_conv2d_relu_biasadd.json");
  PlanInputs in;
  in.bundle = &b;
  in.task_stem = "t";
  in.task_source = "class Model: pass\n";
  auto has_library = [](const Plan& p) {
    for (const auto& o : p.options)
      if (o.space == "library+fused" || o.space == "library") return true;
    return false;
  };
  EXPECT_TRUE(has_library(MakePlan(in)));
  in.contract.libraries = {"cublas"};  // no cuDNN: the convolution cannot be replayed
  EXPECT_FALSE(has_library(MakePlan(in)));
  in.contract.libraries = Contract::KnownLibraries();
  in.contract.torch_ops = false;
  EXPECT_FALSE(has_library(MakePlan(in)));
}

}  // namespace
}  // namespace kopt
