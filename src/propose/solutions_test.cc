// The shipped solutions' knobs: each marked solution parses, and compiles
// with real nvcc at its defaults and at two far-apart valid configurations.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include "build/builder.h"
#include "core/error.h"
#include "core/json.h"
#include "propose/knobs.h"
#include "propose/proposer.h"
#include "task/task_loader.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct Solution {
  fs::path path;
  std::string name;  ///< level1/04_softmax.cu
  std::string source;
};

std::vector<Solution> ShippedSolutions() {
  std::vector<Solution> out;
  for (const char* level : {"level1", "level2", "level3"}) {
    const fs::path dir = testing::SourceDir() / "tasks" / level / "solutions";
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      const auto ext = e.path().extension();
      if (ext != ".cu" && ext != ".py") continue;
      out.push_back({e.path(), std::string(level) + "/" + e.path().filename().string(),
                     ReadTextFile(e.path())});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Solution& a, const Solution& b) { return a.name < b.name; });
  return out;
}

/// The CUDA text nvcc compiles: the file itself, or a hybrid's CUDA_SOURCE
/// string (r"""...""").
std::string CudaText(const Solution& s, const std::string& source) {
  if (s.path.extension() == ".cu") return source;
  const std::size_t var = source.find("CUDA_SOURCE = r\"\"\"");
  if (var == std::string::npos) return "";
  const std::size_t begin = source.find("\"\"\"", var) + 3;
  const std::size_t end = source.find("\"\"\"", begin);
  return source.substr(begin, end - begin);
}

double Distance(const KnobSpace& space, const KnobConfig& a, const KnobConfig& b) {
  double d = 0;
  for (const Knob& k : space.knobs()) {
    if (k.values.size() < 2) continue;
    auto at = [&](long long v) {
      return std::find(k.values.begin(), k.values.end(), v) - k.values.begin();
    };
    d += std::abs(static_cast<double>(at(a.at(k.name)) - at(b.at(k.name)))) / (k.values.size() - 1);
  }
  return d;
}

/// The defaults, then `extra` valid configurations, each the farthest from
/// those already chosen (the extremes a tuner may reach).
std::vector<KnobConfig> FarApart(const KnobSpace& space, int extra) {
  std::vector<KnobConfig> chosen{space.Defaults()};
  const auto all = space.Enumerate(space.Size());
  for (int i = 0; i < extra; ++i) {
    const KnobConfig* best = nullptr;
    double best_d = 0;
    for (const KnobConfig& c : all) {
      double d = 1e300;
      for (const KnobConfig& x : chosen) d = std::min(d, Distance(space, c, x));
      if (d > best_d) {
        best_d = d;
        best = &c;
      }
    }
    if (!best) break;
    chosen.push_back(*best);
  }
  return chosen;
}

TEST(ShippedKnobs, EverySolutionParsesAndSaysWhatItsKnobsTrade) {
  int marked = 0;
  for (const Solution& s : ShippedSolutions()) {
    KnobSpace space = KnobSpace::Parse(s.source, s.name);  // throws on a malformed line
    if (space.empty()) continue;
    ++marked;
    EXPECT_EQ(space.Apply(space.Defaults()), s.source) << s.name;
    EXPECT_LE(space.Size(), 4096u) << s.name << ": small enough to enumerate";
    EXPECT_GE(space.Enumerate(space.Size()).size(), 3u) << s.name;
    for (const Knob& k : space.knobs()) EXPECT_FALSE(k.about.empty()) << s.name << " " << k.name;
  }
  // Every level1 CUDA solution and every level2 hybrid is marked.
  EXPECT_GE(marked, 16) << "level1: 12 .cu and the swish hybrid; level2: 3 hybrids";
}

TEST(ShippedKnobs, TheTunerTakesEveryMarkedTaskOfTheSuite) {
  int tuned = 0, refused = 0;
  for (const Task& task : FindTasks(testing::SourceDir() / "tasks")) {
    bool marked = false;
    for (const Candidate& c : FindSolutions(task))
      marked = marked || !KnobSpace::Parse(c.source, c.name).empty();
    ProposeContext context;
    context.task = task;
    auto tuner = MakeProposer("tune", {});
    if (!marked) {
      EXPECT_THROW(tuner->Begin(context), Error) << task.name;
      ++refused;
      continue;
    }
    tuner->Begin(context);
    auto root = tuner->Root();
    ASSERT_TRUE(root.has_value()) << task.name;
    EXPECT_EQ(root->candidate.source, ReadTextFile(root->candidate.path)) << task.name;
    ParentView view;
    view.candidate = root->candidate;
    view.detail = root->detail;
    EXPECT_EQ(tuner->Propose(view, 3).size(), 3u) << task.name;
    ++tuned;
  }
  EXPECT_EQ(tuned, 16);
  EXPECT_GT(refused, 0);
}

TEST(ShippedKnobs, CompileAtTheirDefaultsAndFarApartConfigurations) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  BuilderOptions options;
  options.cache_dir = testing::ScratchDir("propose-nvcc");
  options.include_dir = testing::SourceDir() / "include";
  options.arch = "sm_90";
  options.jobs = 2;
  auto builder = MakeNvccBuilder(options);

  std::vector<BuildRequest> requests;
  std::vector<std::string> not_compiled;
  for (const Solution& s : ShippedSolutions()) {
    KnobSpace space = KnobSpace::Parse(s.source, s.name);
    if (space.empty()) continue;
    for (const KnobConfig& c : FarApart(space, 2)) {
      const std::string source = space.Apply(c);
      const std::string cuda = CudaText(s, source);
      if (cuda.find("<kopt/abi.h>") == std::string::npos) {
        // load_inline hybrids include torch/extension.h, which needs torch.
        not_compiled.push_back(s.name + "[" + space.Describe(c) + "]");
        continue;
      }
      requests.push_back({cuda, s.name + "[" + space.Describe(c) + "]", {}});
    }
  }
  ASSERT_GE(requests.size(), 45u);
  const auto start = std::chrono::steady_clock::now();
  const auto results = builder->BuildAll(requests);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::size_t i = 0; i < results.size(); ++i)
    EXPECT_TRUE(results[i].ok) << requests[i].name << "\n" << results[i].log;
  std::cout << requests.size() << " compiles in " << seconds
            << " s; not compiled here (need torch): " << not_compiled.size() << "\n";
  for (const std::string& n : not_compiled) std::cout << "  " << n << "\n";
}

}  // namespace
}  // namespace kopt
