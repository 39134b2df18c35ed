// The replay proposer: files and folders of candidates, children of the root
// in order.
#include "propose/replay.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/hash.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

constexpr char kName[] = "replay";

bool SkippedFolder(const fs::path& p) {
  const std::string name = p.filename().string();
  return name == "__pycache__" || (!name.empty() && name[0] == '.');
}

class ReplayProposer : public Proposer {
 public:
  explicit ReplayProposer(std::vector<fs::path> paths) : paths_(std::move(paths)) {}

  std::string Name() const override { return kName; }

  void Begin(const ProposeContext& context) override {
    entries_.clear();
    notes_.clear();
    first_with_.clear();
    next_ = 0;
    from_ = context.from;
    if (from_)
      first_with_.emplace(ContentHash({from_->source}), "the starting kernel " + from_->name);
    if (paths_.empty())
      throw Error(
          "the replay proposer has no candidates: give it candidate files or folders to replay.");
    for (const fs::path& path : paths_) {
      if (!fs::exists(path))
        throw Error(fmt::format("{} does not exist: check the path to replay.", path.string()));
      if (fs::is_directory(path)) {
        ScanFolder(path);
      } else {
        Candidate c = LoadCandidate(path);  // a named file must be a candidate
        Add(std::move(c), path.generic_string());
      }
    }
    if (entries_.empty()) {
      std::vector<std::string> names;
      for (const fs::path& p : paths_) names.push_back(p.string());
      throw Error(
          fmt::format("no candidates found in {}: a candidate is a .cu implementing kopt_forward "
                      "(include/kopt/abi.h) or a .py with class ModelNew.",
                      fmt::join(names, ", ")));
    }
    notes_.insert(notes_.begin(), fmt::format("replay: {} candidate(s) from {} path(s)",
                                              entries_.size(), paths_.size()));
  }

  std::optional<Proposal> Root() override {
    if (!from_) return std::nullopt;
    Proposal p;
    p.parent = -1;
    p.move = fmt::format("start from {}", from_->name);
    p.candidate = *from_;
    p.expected = "the user's kernel, measured as the root";
    p.proposer = kName;
    p.detail = Json{{"file", from_->path.generic_string()}};
    return p;
  }

  std::vector<Proposal> Propose(const ParentView& parent, int n) override {
    std::vector<Proposal> out;
    if (parent.node != 0) return out;  // every replayed file is a child of the root
    while (next_ < entries_.size() && static_cast<int>(out.size()) < n) {
      const Entry& e = entries_[next_++];
      const std::string move = "replay " + e.display;
      if (std::find(parent.tried_moves.begin(), parent.tried_moves.end(), move) !=
          parent.tried_moves.end())
        continue;
      Proposal p;
      p.parent = parent.node;
      p.move = move;
      p.candidate = e.candidate;
      p.expected = "a kernel written elsewhere, measured as it is";
      p.proposer = kName;
      p.detail = Json{{"file", e.display}};
      out.push_back(std::move(p));
    }
    return out;
  }

  std::vector<std::string> Notes() const override { return notes_; }

 private:
  struct Entry {
    Candidate candidate;
    std::string display;  ///< the path as the user would write it
  };

  void ScanFolder(const fs::path& dir) {
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
         ++it) {
      if (it->is_directory()) {
        if (SkippedFolder(it->path())) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file()) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const std::string display = (dir / fs::relative(f, dir)).generic_string();
      const auto ext = f.extension();
      if (ext != ".cu" && ext != ".py") {
        notes_.push_back(fmt::format("replay skipped {}: not a .cu or .py file", display));
        continue;
      }
      try {
        Candidate c = LoadCandidate(f);
        c.name = fs::relative(f, dir).generic_string();
        Add(std::move(c), display);
      } catch (const Error& e) {
        notes_.push_back(fmt::format("replay skipped {}: {}", display, e.what()));
      }
    }
  }

  void Add(Candidate c, const std::string& display) {
    const std::string hash = ContentHash({c.source});
    auto [it, inserted] = first_with_.emplace(hash, display);
    if (!inserted) {
      notes_.push_back(
          fmt::format("replay skipped {}: the same source as {}", display, it->second));
      return;
    }
    entries_.push_back({std::move(c), display});
  }

  std::vector<fs::path> paths_;
  std::optional<Candidate> from_;
  std::vector<Entry> entries_;
  std::map<std::string, std::string> first_with_;  ///< source hash -> the first file with it
  std::size_t next_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<Proposer> MakeReplayProposer(const std::vector<fs::path>& paths) {
  return std::make_unique<ReplayProposer>(paths);
}

}  // namespace kopt
