// The tune proposer, driven by hand on a small marked kernel.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>

#include "core/error.h"
#include "core/json.h"
#include "propose/knobs.h"
#include "propose/proposer.h"
#include "task/task_loader.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

const char kTask[] = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(1024)]

def get_init_inputs():
    return []
)";

// Three knobs, 7 * 4 * 4 = 112 configurations, a constraint between two.
const char kKernel[] = R"(#include <kopt/abi.h>
constexpr int THREADS = 256;  // kopt:knob THREADS 256 16..1024*2 threads per block
constexpr int VEC = 1;        // kopt:knob VEC 1 {1,2,4,8} floats per thread
constexpr int UNROLL = 2;     // kopt:knob UNROLL 2 1..4 loop unroll
// kopt:constraint THREADS * VEC <= 1024
extern "C" int kopt_forward() { return 0; }
)";

const char kPlainKernel[] =
    "#include <kopt/abi.h>\nextern \"C\" int kopt_forward() { return 0; }\n";

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

/// A task folder holding t.py and the given solutions.
Task MakeTask(const std::vector<std::pair<std::string, std::string>>& solutions) {
  const fs::path dir = testing::ScratchDir("tune");
  Write(dir / "t.py", kTask);
  for (const auto& [name, text] : solutions) Write(dir / "solutions" / name, text);
  return LoadTask(dir / "t.py");
}

ProposeContext Context(const Task& task, std::uint64_t seed = 7) {
  ProposeContext c;
  c.task = task;
  c.arch = "sm_90";
  c.seed = seed;
  return c;
}

std::unique_ptr<Proposer> Tuner(const Task& task, std::uint64_t seed = 7,
                                TunerOptions options = {}) {
  ProposerOptions o;
  o.tuner = options;
  auto p = MakeProposer("tune", o);
  p->Begin(Context(task, seed));
  return p;
}

ParentView View(const Proposal& p, int node, int depth) {
  ParentView v;
  v.node = node;
  v.depth = depth;
  v.candidate = p.candidate;
  v.detail = p.detail;
  return v;
}

KnobConfig ConfigOf(const Proposal& p) {
  KnobConfig c;
  for (const auto& [k, v] : p.detail.at("config").items()) c[k] = v.get<long long>();
  return c;
}

int KnobsChanged(const KnobConfig& a, const KnobConfig& b) {
  int n = 0;
  for (const auto& [k, v] : a) n += b.at(k) != v;
  return n;
}

std::size_t IndexIn(const Knob& k, long long v) {
  return std::find(k.values.begin(), k.values.end(), v) - k.values.begin();
}

const KnobSpace& Space() {
  static const KnobSpace space = KnobSpace::Parse(kKernel, "t.cu");
  return space;
}

TEST(Tuner, RootIsTheShippedKernelAtItsDefaults) {
  Task task = MakeTask({{"t.cu", kKernel}, {"t_plain.cu", kPlainKernel}});
  auto tuner = Tuner(task);
  EXPECT_EQ(tuner->Name(), "tune");
  auto root = tuner->Root();
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->parent, -1);
  EXPECT_EQ(root->candidate.source, kKernel);  // byte for byte
  EXPECT_EQ(root->candidate.kind, CandidateKind::kCuda);
  EXPECT_EQ(root->candidate.name, "t[THREADS=256,VEC=1,UNROLL=2]");
  EXPECT_EQ(root->proposer, "tune");
  EXPECT_EQ(root->detail.at("mode"), "root");
  EXPECT_EQ(ConfigOf(*root), Space().Defaults());
  ASSERT_FALSE(tuner->Notes().empty());
  EXPECT_NE(tuner->Notes()[0].find(
                "t.cu with knobs THREADS (7 values), VEC (4 values), UNROLL (4 values)"),
            std::string::npos)
      << tuner->Notes()[0];
  EXPECT_NE(tuner->Notes()[0].find("112 configurations, 88 valid"), std::string::npos)
      << tuner->Notes()[0];
}

TEST(Tuner, NearTheRootMovesAreWideAndDiverse) {
  Task task = MakeTask({{"t.cu", kKernel}});
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto tuner = Tuner(task, seed);
    auto root = *tuner->Root();
    std::vector<Proposal> kids = tuner->Propose(View(root, 0, 0), 6);
    ASSERT_EQ(kids.size(), 6u);
    std::set<std::string> sources;
    std::map<std::string, std::set<long long>> values;
    int multi = 0;
    for (const Proposal& p : kids) {
      const KnobConfig c = ConfigOf(p);
      EXPECT_TRUE(Space().Valid(c)) << p.move;
      EXPECT_EQ(p.parent, 0);
      EXPECT_EQ(p.detail.at("mode"), "wide");
      EXPECT_EQ(p.candidate.source, Space().Apply(c));
      EXPECT_EQ(p.candidate.name, "t[" + Space().Describe(c) + "]");
      EXPECT_FALSE(p.expected.empty());
      sources.insert(p.candidate.source);
      for (const auto& [k, v] : c) values[k].insert(v);
      multi += KnobsChanged(c, Space().Defaults()) >= 2;
    }
    EXPECT_EQ(sources.size(), 6u);
    // Far-apart configurations spread over every knob's values...
    EXPECT_GE(values["THREADS"].size(), 4u) << "seed " << seed;
    EXPECT_GE(values["VEC"].size(), 3u) << "seed " << seed;
    EXPECT_GE(values["UNROLL"].size(), 3u) << "seed " << seed;
    // ...and most of them change several knobs at once.
    EXPECT_GE(multi, 4) << "seed " << seed;
  }
  auto tuner = Tuner(task);
  std::vector<Proposal> kids = tuner->Propose(View(*tuner->Root(), 0, 0), 1);
  // The move names each changed knob, and `expected` says what it trades.
  const Proposal& p = kids[0];
  for (const std::string k : p.detail.at("changed")) {
    EXPECT_NE(p.move.find(k + " "), std::string::npos) << p.move;
    EXPECT_NE(p.expected.find(k), std::string::npos) << p.expected;
  }
  EXPECT_NE(p.expected.find(Space().Find(p.detail.at("changed")[0])->about), std::string::npos)
      << p.expected;
}

TEST(Tuner, DeepMovesAreOneKnobOneStep) {
  Task task = MakeTask({{"t.cu", kKernel}});
  auto tuner = Tuner(task);
  auto root = *tuner->Root();
  auto kid = tuner->Propose(View(root, 0, 0), 1).at(0);
  const KnobConfig at = ConfigOf(kid);
  const ParentView deep = View(kid, 1, 1);
  auto grandkids = tuner->Propose(deep, 100);
  ASSERT_FALSE(grandkids.empty());
  bool pairs_started = false;
  for (const Proposal& g : grandkids) {
    const KnobConfig c = ConfigOf(g);
    EXPECT_TRUE(Space().Valid(c));
    EXPECT_EQ(g.detail.at("mode"), "neighbour");
    const int changed = KnobsChanged(c, at);
    ASSERT_TRUE(changed == 1 || changed == 2) << g.move;
    if (changed == 2) pairs_started = true;
    EXPECT_FALSE(pairs_started && changed == 1) << "single-knob moves come first";
    for (const Knob& k : Space().knobs()) {
      const long long step =
          static_cast<long long>(IndexIn(k, c.at(k.name))) - IndexIn(k, at.at(k.name));
      if (changed == 2) {
        EXPECT_LE(std::abs(step), 1) << g.move;
        continue;
      }
      if (step == 0) continue;
      // To the nearest valid value in that direction.
      for (long long s = (step > 0 ? 1 : -1); s != step; s += (step > 0 ? 1 : -1)) {
        KnobConfig between = at;
        between[k.name] = k.values[IndexIn(k, at.at(k.name)) + s];
        EXPECT_FALSE(Space().Valid(between)) << g.move;
      }
    }
    // The move is in words, from the parent's configuration.
    for (const std::string k : g.detail.at("changed"))
      EXPECT_NE(g.move.find(k + " " + std::to_string(at.at(k)) + " -> " + std::to_string(c.at(k))),
                std::string::npos)
          << g.move;
  }
  // Its children know where they are: a grandchild's children move from it.
  const Proposal& g = grandkids[0];
  auto next = tuner->Propose(View(g, 9, 2), 3);
  for (const Proposal& p : next) EXPECT_EQ(KnobsChanged(ConfigOf(p), ConfigOf(g)) <= 2, true);
}

TEST(Tuner, NeverProposesForbiddenOrRepeatedConfigurationsAndRunsDry) {
  Task task = MakeTask({{"t.cu", kKernel}});
  auto tuner = Tuner(task);
  auto root = *tuner->Root();
  ParentView rv = View(root, 0, 0);
  std::set<KnobConfig> seen{Space().Defaults()};
  for (;;) {
    auto kids = tuner->Propose(rv, 5);
    if (kids.empty()) break;
    for (const Proposal& p : kids) {
      const KnobConfig c = ConfigOf(p);
      EXPECT_TRUE(Space().Valid(c)) << p.move;
      EXPECT_TRUE(seen.insert(c).second) << "proposed twice: " << p.move;
      rv.tried_moves.push_back(p.move);
    }
  }
  EXPECT_EQ(seen.size(), 88u);  // every valid configuration, once
  EXPECT_TRUE(tuner->Propose(rv, 5).empty());
  // Deeper nodes have nothing left either: the run remembers what it proposed.
  Proposal any = root;
  any.candidate.source = Space().Apply({{"THREADS", 64}});
  any.detail = Json::object();
  EXPECT_TRUE(tuner->Propose(View(any, 3, 2), 10).empty());
}

TEST(Tuner, TriedMovesAndEarlierProposalsAreSkipped) {
  Task task = MakeTask({{"t.cu", kKernel}});
  auto tuner = Tuner(task);
  auto root = *tuner->Root();
  Proposal at64 = root;
  at64.candidate.source = Space().Apply({{"THREADS", 64}});
  ParentView v = View(at64, 4, 3);
  v.tried_moves = {"THREADS 64 -> 128", "THREADS 64 -> 32"};
  auto kids = tuner->Propose(v, 100);
  std::set<std::string> moves;
  for (const Proposal& p : kids) moves.insert(p.move);
  EXPECT_FALSE(moves.count("THREADS 64 -> 128"));
  EXPECT_FALSE(moves.count("THREADS 64 -> 32"));
  EXPECT_TRUE(moves.count("VEC 1 -> 2"));
  // Asking the same parent again finds nothing new.
  EXPECT_TRUE(tuner->Propose(v, 100).empty());
}

std::vector<std::string> RunTuner(const Task& task, std::uint64_t seed) {
  auto tuner = Tuner(task, seed);
  auto root = *tuner->Root();
  std::vector<std::string> moves;
  auto kids = tuner->Propose(View(root, 0, 0), 4);
  for (const Proposal& p : kids) moves.push_back(p.move);
  for (std::size_t i = 0; i < kids.size(); ++i) {
    for (const Proposal& p : tuner->Propose(View(kids[i], static_cast<int>(i) + 1, 1), 2))
      moves.push_back(p.move);
  }
  return moves;
}

TEST(Tuner, SameSeedSameProposals) {
  Task task = MakeTask({{"t.cu", kKernel}});
  const auto a = RunTuner(task, 11), b = RunTuner(task, 11), c = RunTuner(task, 12);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), 12u);
}

TEST(Tuner, SamplesSpacesTooLargeToEnumerate) {
  Task task = MakeTask({{"t.cu", kKernel}});
  TunerOptions options;
  options.enumerate_limit = 10;  // force sampling
  options.sample_pool = 64;
  auto tuner = Tuner(task, 3, options);
  auto root = *tuner->Root();
  auto kids = tuner->Propose(View(root, 0, 0), 8);
  ASSERT_EQ(kids.size(), 8u);
  std::set<KnobConfig> configs;
  for (const Proposal& p : kids) {
    EXPECT_TRUE(Space().Valid(ConfigOf(p)));
    configs.insert(ConfigOf(p));
  }
  EXPECT_EQ(configs.size(), 8u);
}

TEST(Tuner, ReferenceParentGetsTheDefaultsFirst) {
  Task task = MakeTask({{"t.cu", kKernel}});
  auto tuner = Tuner(task);
  ParentView reference;  // the root is the reference: no candidate
  auto kids = tuner->Propose(reference, 2);
  ASSERT_EQ(kids.size(), 2u);
  EXPECT_EQ(kids[0].candidate.source, kKernel);
  EXPECT_EQ(kids[0].move, "tune t.cu at its defaults (THREADS=256,VEC=1,UNROLL=2)");
  EXPECT_NE(kids[1].candidate.source, kKernel);
}

TEST(Tuner, KnoblessParentGetsNothing) {
  Task task = MakeTask({{"t.cu", kKernel}});
  auto tuner = Tuner(task);
  Proposal other;
  other.candidate.source = kPlainKernel;
  EXPECT_TRUE(tuner->Propose(View(other, 2, 1), 4).empty());
}

TEST(Tuner, TunesFromAndHybrids) {
  Task task = MakeTask({});
  const std::string py =
      std::string("import kopt\nclass ModelNew:\n    pass\nCUDA_SOURCE = r\"\"\"\n") + kKernel +
      "\"\"\"\n";
  ProposeContext c = Context(task);
  c.from = Candidate{CandidateKind::kHybrid, "/x/mine.py", py, "mine.py"};
  auto tuner = MakeProposer("tune", {});
  tuner->Begin(c);
  auto root = *tuner->Root();
  EXPECT_EQ(root.candidate.kind, CandidateKind::kHybrid);
  EXPECT_EQ(root.candidate.name, "mine[THREADS=256,VEC=1,UNROLL=2]");
  auto kids = tuner->Propose(View(root, 0, 0), 2);
  ASSERT_EQ(kids.size(), 2u);
  EXPECT_EQ(kids[0].candidate.kind, CandidateKind::kHybrid);
  EXPECT_NE(kids[0].candidate.source.find("class ModelNew"), std::string::npos);
}

TEST(Tuner, NothingToTuneIsAnError) {
  Task task = MakeTask({{"t.cu", kPlainKernel}});
  try {
    Tuner(task);
    FAIL() << "expected kopt::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "task t has no kernel with `// kopt:knob` lines: mark its knobs (docs/tuning.md) or "
              "pass --from.");
  }
  ProposeContext c = Context(task);
  c.from = Candidate{CandidateKind::kCuda, "/x/mine.cu", kPlainKernel, "mine.cu"};
  auto tuner = MakeProposer("tune", {});
  try {
    tuner->Begin(c);
    FAIL() << "expected kopt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "mine.cu has no `// kopt:knob` lines: mark its knobs (docs/tuning.md)"),
              std::string::npos)
        << e.what();
  }
  // A malformed knob line in the shipped solution names its file and line.
  Task bad = MakeTask({{"t.cu", "#define A 4  // kopt:knob A 5 {4,5}\nkopt_forward\n"}});
  try {
    Tuner(bad);
    FAIL() << "expected kopt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.cu:1: kopt:knob A says the default is 5"),
              std::string::npos)
        << e.what();
  }
}

TEST(Proposers, FactoryNamesTheChoices) {
  EXPECT_EQ(ProposerNames(), (std::vector<std::string>{"expert", "tune", "replay", "llm"}));
  try {
    MakeProposer("magic", {});
    FAIL() << "expected kopt::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "there is no proposer named \"magic\": choose one of expert, tune, replay, llm.");
  }
}

}  // namespace
}  // namespace kopt
