// On a real GPU: one Evaluator survives an illegal address, a hang and an
// out-of-memory candidate, each reported as its outcome, then still measures
// a correct kernel correctly.
#include <gtest/gtest.h>

#include "build/builder.h"
#include "core/json.h"
#include "plan/contract_inference.h"
#include "plan/planner.h"
#include "run/evaluator.h"
#include "task/task_loader.h"
#include "testing/paths.h"

namespace kopt {
namespace {

TEST(GpuEval, FaultsBecomeOutcomesAndThePoolCarriesOn) {
  KOPT_REQUIRE_GPU();
  auto root = testing::SourceDir();
  auto cache = testing::ScratchDir("gpu-eval");
  BuilderOptions bo;
  bo.cache_dir = cache / "builds";
  bo.include_dir = root / "include";
  auto builder = MakeNvccBuilder(bo);
  WorkerOptions wo;
  wo.repo_root = root;
  wo.cache_dir = cache;
  auto worker = MakeProcessWorker(wo);
  Evaluator ev(builder.get(), worker.get(), EvaluatorConfig{cache, false});

  Task task = LoadTask(root / "tasks/level1/01_relu.py");
  TaskBundle bundle = ev.Bundle(task, false, false);
  EXPECT_FALSE(bundle.Degenerate());
  EXPECT_GT(bundle.floor_ms, 0);

  EvalOptions opt;
  opt.verify_timeout_s = 20;
  opt.timing["max_seconds"] = 1.0;
  auto eval = [&](const std::string& rel) {
    return ev.Evaluate(task, bundle, LoadCandidate(root / rel), opt).outcome;
  };

  Outcome illegal = eval("tests/faults/illegal_address.cu");
  ASSERT_TRUE(std::holds_alternative<Crashed>(illegal)) << OutcomeLine(illegal);
  EXPECT_EQ(std::get<Crashed>(illegal).kind, "cuda_error");

  Outcome hang = eval("tests/faults/hang.cu");
  EXPECT_TRUE(std::holds_alternative<TimedOut>(hang)) << OutcomeLine(hang);

  Outcome oom = eval("tests/faults/oom.py");
  ASSERT_TRUE(std::holds_alternative<Crashed>(oom)) << OutcomeLine(oom);
  EXPECT_EQ(std::get<Crashed>(oom).kind, "oom");

  Outcome wrong = eval("tests/faults/wrong_answer.cu");
  EXPECT_TRUE(std::holds_alternative<Incorrect>(wrong)) << OutcomeLine(wrong);

  Outcome good = eval("tasks/level1/solutions/01_relu.cu");
  ASSERT_TRUE(std::holds_alternative<Measured>(good)) << OutcomeLine(good);
  const auto& m = std::get<Measured>(good);
  EXPECT_GT(m.time_ms.median, bundle.floor_ms * 0.9);
  ASSERT_TRUE(m.SpeedupVsEager());
  EXPECT_GT(*m.SpeedupVsEager(), 0.5);
}

// A deep, narrow MLP (193 kernels of a few microseconds each) is
// launch-bound: the planner leads with its CUDA-graph replay, which verifies
// (inputs copied in, outputs cloned out, every call recomputed) and beats
// eager PyTorch by removing the launch gaps.
TEST(GpuEval, ALaunchBoundModelIsReplayedFromACudaGraphAndVerifies) {
  KOPT_REQUIRE_GPU();
  auto root = testing::SourceDir();
  auto cache = testing::ScratchDir("gpu-eval-graph");
  BuilderOptions bo;
  bo.cache_dir = cache / "builds";
  bo.include_dir = root / "include";
  auto builder = MakeNvccBuilder(bo);
  WorkerOptions wo;
  wo.repo_root = root;
  wo.cache_dir = cache;
  auto worker = MakeProcessWorker(wo);
  Evaluator ev(builder.get(), worker.get(), EvaluatorConfig{cache, false});

  Task task = LoadTask(root / "tests/profile_zoo/tasks/deep_mlp.py");
  TaskBundle bundle = ev.Bundle(task, true, false);
  ASSERT_TRUE(bundle.eager_ms);
  EXPECT_GE(bundle.latency_stages, 96) << "96 dependent GEMMs";
  PlanInputs in;
  in.bundle = &bundle;
  in.task_stem = "deep_mlp";
  in.task_source = ReadTextFile(task.path);
  InferContract(OpGraphFromJson(bundle.graph), bundle, &in.contract);
  in.contract.precision = LoadContract(task).precision;
  const Plan plan = MakePlan(in);
  ASSERT_FALSE(plan.options.empty());
  const PlanOption& first = plan.options.front();
  ASSERT_EQ(first.space, "cuda-graph") << first.label;
  EXPECT_LT(first.est_ms, bundle.eager_ms->median);

  EvalOptions opt;
  opt.verify_timeout_s = 60;
  opt.timing["max_seconds"] = 1.0;
  // Hybrids load from a file, as the loop writes them (Tuner's ensure_path).
  Candidate graphed = first.candidate;
  graphed.path = cache / "deep_mlp_graphed.py";
  WriteTextFileAtomic(graphed.path, graphed.source);
  Outcome o = ev.Evaluate(task, bundle, graphed, opt).outcome;
  ASSERT_TRUE(std::holds_alternative<Measured>(o)) << OutcomeLine(o);
  const auto& m = std::get<Measured>(o);
  ASSERT_TRUE(SpeedupVsEager(m, bundle));
  std::printf("deep_mlp: eager %.4f ms, graphed %.4f ms, %.2fx; planner estimate %.4f ms\n",
              bundle.eager_ms->median, m.time_ms.median, *SpeedupVsEager(m, bundle), first.est_ms);
  EXPECT_GT(*SpeedupVsEager(m, bundle), 1.5);
}

}  // namespace
}  // namespace kopt
