// The replay proposer: order, folders, and what it skips.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "propose/proposer.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string Cuda(const std::string& tag) {
  return "#include <kopt/abi.h>\n// " + tag + "\nextern \"C\" int kopt_forward() { return 0; }\n";
}
std::string Hybrid(const std::string& tag) {
  return "# " + tag + "\nclass ModelNew(object):\n    pass\n";
}

std::unique_ptr<Proposer> Replay(const std::vector<fs::path>& paths,
                                 std::optional<Candidate> from = {}) {
  ProposerOptions o;
  o.replay_paths = paths;
  auto p = MakeProposer("replay", o);
  ProposeContext c;
  c.from = std::move(from);
  p->Begin(c);
  return p;
}

std::vector<std::string> Moves(const std::vector<Proposal>& ps) {
  std::vector<std::string> out;
  for (const Proposal& p : ps) out.push_back(p.move);
  return out;
}

bool HasNote(const Proposer& p, const std::string& text) {
  for (const std::string& n : p.Notes()) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(Replay, FoldersInOrderThenFilesEachAChildOfTheRoot) {
  const fs::path dir = testing::ScratchDir("replay");
  const fs::path attempts = dir / "attempts";
  Write(attempts / "b.cu", Cuda("b"));
  Write(attempts / "a.cu", Cuda("a"));
  Write(attempts / "sub" / "c.py", Hybrid("c"));
  Write(attempts / "sub" / "task.py", "class Model:\n    pass\n");  // not a ModelNew
  Write(attempts / "d.cu", "__global__ void k() {}\n");             // no kopt_forward
  Write(attempts / "notes.txt", "tried things\n");
  Write(attempts / "copy_of_a.cu", Cuda("a"));  // same source as a.cu
  Write(attempts / ".hidden" / "x.cu", Cuda("x"));
  Write(attempts / "__pycache__" / "y.py", Hybrid("y"));
  Write(dir / "last.cu", Cuda("last"));

  auto replay = Replay({attempts, dir / "last.cu"});
  EXPECT_EQ(replay->Name(), "replay");
  EXPECT_FALSE(replay->Root().has_value());  // the reference is the root

  ParentView root;  // node 0
  const std::string a = attempts.generic_string();
  auto first = replay->Propose(root, 2);
  EXPECT_EQ(Moves(first),
            (std::vector<std::string>{"replay " + a + "/a.cu", "replay " + a + "/b.cu"}));
  EXPECT_EQ(first[0].candidate.kind, CandidateKind::kCuda);
  EXPECT_EQ(first[0].candidate.source, Cuda("a"));
  EXPECT_EQ(first[0].candidate.name, "a.cu");
  EXPECT_EQ(first[0].parent, 0);
  EXPECT_EQ(first[0].proposer, "replay");
  EXPECT_EQ(first[0].detail.at("file"), a + "/a.cu");

  ParentView child;
  child.node = 1;
  child.depth = 1;
  EXPECT_TRUE(replay->Propose(child, 5).empty());  // only the root has children

  root.tried_moves = Moves(first);
  auto rest = replay->Propose(root, 10);
  ASSERT_EQ(Moves(rest),
            (std::vector<std::string>{"replay " + a + "/sub/c.py",
                                      "replay " + (dir / "last.cu").generic_string()}));
  EXPECT_EQ(rest[0].candidate.kind, CandidateKind::kHybrid);
  EXPECT_EQ(rest[0].candidate.name, "sub/c.py");
  EXPECT_TRUE(replay->Propose(root, 10).empty());  // exhausted

  EXPECT_TRUE(HasNote(*replay, "replay: 4 candidate(s) from 2 path(s)"));
  EXPECT_TRUE(HasNote(*replay, "replay skipped " + a + "/sub/task.py: ")) << replay->Notes().size();
  EXPECT_TRUE(HasNote(*replay, "defines no `class ModelNew`"));
  EXPECT_TRUE(HasNote(*replay, "replay skipped " + a + "/d.cu: "));
  EXPECT_TRUE(HasNote(*replay, "defines no kopt_forward"));
  EXPECT_TRUE(HasNote(*replay, "replay skipped " + a + "/notes.txt: not a .cu or .py file"));
  EXPECT_TRUE(
      HasNote(*replay, "replay skipped " + a + "/copy_of_a.cu: the same source as " + a + "/a.cu"));
  EXPECT_FALSE(HasNote(*replay, "x.cu"));  // hidden folders and __pycache__ are not looked at
  EXPECT_FALSE(HasNote(*replay, "y.py"));
}

TEST(Replay, RootIsFromWhenGiven) {
  const fs::path dir = testing::ScratchDir("replay");
  Write(dir / "a.cu", Cuda("a"));
  Write(dir / "mine.cu", Cuda("mine"));
  Candidate mine{CandidateKind::kCuda, dir / "mine.cu", Cuda("mine"), "mine.cu"};
  auto replay = Replay({dir}, mine);
  auto root = replay->Root();
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->parent, -1);
  EXPECT_EQ(root->candidate.source, Cuda("mine"));
  EXPECT_EQ(root->move, "start from mine.cu");
  ParentView r;
  r.candidate = root->candidate;
  auto kids = replay->Propose(r, 10);
  EXPECT_EQ(Moves(kids), (std::vector<std::string>{"replay " + dir.generic_string() + "/a.cu"}));
  EXPECT_TRUE(HasNote(*replay, "mine.cu: the same source as the starting kernel mine.cu"));
}

TEST(Replay, MistakesAreErrors) {
  const fs::path dir = testing::ScratchDir("replay");
  Write(dir / "empty" / "readme.md", "nothing\n");
  Write(dir / "task.py", "class Model:\n    pass\n");
  auto error = [](const std::vector<fs::path>& paths) -> std::string {
    try {
      Replay(paths);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error({dir / "missing"}),
            (dir / "missing").string() + " does not exist: check the path to replay.");
  EXPECT_NE(error({dir / "task.py"}).find("defines no `class ModelNew`"), std::string::npos);
  EXPECT_NE(error({dir / "empty"}).find("no candidates found in " + (dir / "empty").string()),
            std::string::npos);
  EXPECT_NE(error({}).find("the replay proposer has no candidates"), std::string::npos);
}

}  // namespace
}  // namespace kopt
