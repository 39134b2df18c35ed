#include "task/contract.h"

#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "testing/paths.h"

namespace kopt {
namespace {

Task TaskIn(const std::filesystem::path& dir, const std::string& stem) {
  Task t;
  t.path = dir / (stem + ".py");
  t.name = stem;
  return t;
}

TEST(Contract, DefaultsAreStrictTorchOpsAllowedNoSecondShape) {
  Contract c;
  EXPECT_EQ(c.precision, Precision::kStrict);
  EXPECT_TRUE(c.torch_ops);
  EXPECT_TRUE(c.second_shape.empty());
  EXPECT_EQ(DescribeContract(c), "precision strict (fp32); torch operators allowed");
  Json j = ToJson(c);
  EXPECT_EQ(j["precision"], "strict");
  EXPECT_EQ(j["torch_ops"], true);
  EXPECT_TRUE(j["second_shape"].empty());
  EXPECT_EQ(j["source"], "default");
}

TEST(Contract, ParsesEveryField) {
  Contract c = ContractFromJson(
      Json::parse(R"({"precision": "tf32", "torch_ops": false, "second_shape": {"batch_size": 8193, "dim": 7},
                      "comment": "for people"})"),
      "x.contract.json");
  EXPECT_EQ(c.precision, Precision::kTf32);
  EXPECT_FALSE(c.torch_ops);
  ASSERT_EQ(c.second_shape.size(), 2u);
  EXPECT_EQ(c.second_shape.at("batch_size"), 8193);
  EXPECT_EQ(c.second_shape.at("dim"), 7);
  EXPECT_EQ(c.source, "x.contract.json");
  std::string d = DescribeContract(c);
  EXPECT_NE(d.find("precision tf32"), std::string::npos) << d;
  EXPECT_NE(d.find("torch operators forbidden"), std::string::npos) << d;
  EXPECT_NE(d.find("second shape batch_size=8193 dim=7"), std::string::npos) << d;
  EXPECT_EQ(ContractFromJson(Json::parse(R"({"precision": "bf16"})"), "f").precision, Precision::kBf16);
}

TEST(Contract, BadFieldsAreOneSentenceNamingTheFile) {
  auto fails_with = [](const char* text, const char* words) {
    try {
      ContractFromJson(Json::parse(text), "t.contract.json");
      ADD_FAILURE() << text << " was accepted";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("t.contract.json"), std::string::npos) << m;
      EXPECT_NE(m.find(words), std::string::npos) << m;
    }
  };
  fails_with(R"({"precision": "fp16"})", "not one of strict, tf32, bf16");
  fails_with(R"({"torch_ops": "no"})", "true or false");
  fails_with(R"({"second_shape": {"batch_size": 1.5}})", "must be an integer");
  fails_with(R"({"second_shape": {"not a name": 3}})", "not a Python name");
  fails_with(R"({"second_shape": [1, 2]})", "must be an object");
  fails_with(R"({"precison": "tf32"})", "unknown contract field \"precison\"");
  fails_with(R"([1])", "JSON object");
}

TEST(Contract, FileBesideTheTaskThenCommandLineOnTop) {
  auto dir = testing::ScratchDir("contract");
  Task plain = TaskIn(dir, "01_plain");
  EXPECT_EQ(LoadContract(plain).source, "default");  // no file: defaults
  EXPECT_EQ(ContractPath(plain), dir / "01_plain.contract.json");

  Task t = TaskIn(dir, "02_ops");
  std::ofstream(ContractPath(t)) << R"({"torch_ops": false, "second_shape": {"batch_size": 9}})";
  Contract c = LoadContract(t);
  EXPECT_FALSE(c.torch_ops);
  EXPECT_EQ(c.second_shape.at("batch_size"), 9);

  ContractOverrides o;
  EXPECT_TRUE(o.Empty());
  o.precision = "tf32";
  o.allow_torch_ops = true;
  o.second_shape = {"batch_size=17", "dim=5"};
  Contract m = ResolveContract(t, o);
  EXPECT_EQ(m.precision, Precision::kTf32);
  EXPECT_TRUE(m.torch_ops);  // the command line wins over the file
  EXPECT_EQ(m.second_shape.at("batch_size"), 17);
  EXPECT_EQ(m.second_shape.at("dim"), 5);
  EXPECT_NE(m.source.find("02_ops.contract.json and the command line"), std::string::npos) << m.source;

  // Without a file the source is the command line alone; an untouched
  // contract keeps "default".
  ContractOverrides forbid;
  forbid.forbid_torch_ops = true;
  Contract f = ResolveContract(plain, forbid);
  EXPECT_FALSE(f.torch_ops);
  EXPECT_EQ(f.source, "command line");
  EXPECT_EQ(ResolveContract(plain, {}).source, "default");

  // --contract FILE replaces the task's file.
  std::ofstream(dir / "other.json") << R"({"precision": "bf16"})";
  ContractOverrides file;
  file.file = (dir / "other.json").string();
  Contract other = ResolveContract(t, file);
  EXPECT_EQ(other.precision, Precision::kBf16);
  EXPECT_TRUE(other.torch_ops);
  EXPECT_TRUE(other.second_shape.empty());
}

TEST(Contract, BadOverridesAreOneSentence) {
  for (const char* bad : {"batch_size", "batch_size=", "=3", "batch_size=3x", "batch size=3", "b=1e3"}) {
    ContractOverrides o;
    o.second_shape = {bad};
    EXPECT_THROW(ApplyOverrides(Contract{}, o), Error) << bad;
  }
  ContractOverrides both;
  both.forbid_torch_ops = both.allow_torch_ops = true;
  EXPECT_THROW(ApplyOverrides(Contract{}, both), Error);
  ContractOverrides prec;
  prec.precision = "fp8";
  EXPECT_THROW(ApplyOverrides(Contract{}, prec), Error);
  ContractOverrides neg;
  neg.second_shape = {"n=-1"};
  EXPECT_EQ(ApplyOverrides(Contract{}, neg).second_shape.at("n"), -1);  // the worker judges the value
}

TEST(Contract, StructuralOpsAreAllocationViewsCopiesAndFills) {
  for (const char* op : {"aten::empty_like", "aten::empty.memory_format", "aten::view", "aten::as_strided",
                         "aten::contiguous", "aten::copy_", "aten::_to_copy", "aten::fill_.Scalar", "aten::zeros"})
    EXPECT_TRUE(IsStructuralTorchOp(op)) << op;
  for (const char* op : {"aten::relu", "aten::mm", "aten::addmm", "aten::clamp_min", "aten::sum", "aten::cat",
                         "aten::_softmax", "aten::mul.Tensor"})
    EXPECT_FALSE(IsStructuralTorchOp(op)) << op;
  EXPECT_TRUE(IsTorchOp("aten::relu"));
  EXPECT_TRUE(IsTorchOp("prims::add"));
  EXPECT_FALSE(IsTorchOp("my_ext::relu"));  // a candidate's own registered kernel
}

}  // namespace
}  // namespace kopt
