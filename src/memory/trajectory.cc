#include "memory/trajectory.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace kopt {
namespace {

// A reason or move longer than this is shortened inside its line, so one
// long compiler message cannot crowd out the rest of the summary.
constexpr std::size_t kMaxFieldChars = 160;
constexpr std::size_t kMaxMovesPerGroup = 3;

// At most `n` bytes of `s`, cut at a UTF-8 character boundary, "..." marking a cut.
std::string Shorten(const std::string& s, std::size_t n = kMaxFieldChars) {
  std::string one_line = s;
  std::replace(one_line.begin(), one_line.end(), '\n', ' ');
  if (one_line.size() <= n) return one_line;
  std::size_t cut = n - 3;
  while (cut > 0 && (static_cast<unsigned char>(one_line[cut]) & 0xC0) == 0x80) --cut;
  return one_line.substr(0, cut) + "...";
}

std::string StepMove(const TrajectoryStep& s) {
  return Shorten(s.move.empty() ? "(no move given)" : s.move);
}

}  // namespace

std::string NormalizeMove(const std::string& move) {
  std::string out;
  bool space = false;
  for (char ch : move) {
    auto c = static_cast<unsigned char>(ch);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  while (!out.empty() && out.back() == '.') out.pop_back();
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

void Trajectory::Add(TrajectoryStep step) { steps_.push_back(std::move(step)); }

bool Trajectory::Tried(const std::string& move, int parent) const {
  std::string m = NormalizeMove(move);
  return std::any_of(steps_.begin(), steps_.end(), [&](const TrajectoryStep& s) {
    return (parent < 0 || s.parent == parent) && NormalizeMove(s.move) == m;
  });
}

std::string Trajectory::Summary(std::size_t max_chars) const {
  std::vector<std::string> lines;
  int measured = 0;
  const TrajectoryStep* best = nullptr;
  for (const TrajectoryStep& s : steps_) {
    if (s.outcome != "measured") continue;
    ++measured;
    if (!best || s.speedup > best->speedup) best = &s;
  }
  int failed = static_cast<int>(steps_.size()) - measured;
  lines.push_back(fmt::format("Tried so far: {} candidates, {} measured, {} failed.", steps_.size(),
                              measured, failed));
  if (best)
    lines.push_back(fmt::format("Best: node {} ({:.2f}x vs eager): {}{}", best->node, best->speedup,
                                StepMove(*best),
                                best->diagnosis.empty() ? "" : " [then: " + best->diagnosis + "]"));
  else if (!steps_.empty())
    lines.push_back("Best: nothing measured yet.");

  // Failures by outcome and reason: the largest group first, then the newest.
  struct Group {
    std::string outcome, reason;
    std::vector<const TrajectoryStep*> steps;  // newest first
    std::size_t newest = 0;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (std::size_t i = steps_.size(); i-- > 0;) {
    const TrajectoryStep& s = steps_[i];
    if (s.outcome == "measured") continue;
    Group& g = groups[{s.outcome, s.reason}];
    if (g.steps.empty()) g = Group{s.outcome, s.reason, {}, i};
    g.steps.push_back(&s);
  }
  std::vector<const Group*> ordered;
  for (const auto& [_, g] : groups) ordered.push_back(&g);
  std::sort(ordered.begin(), ordered.end(), [](const Group* a, const Group* b) {
    if (a->steps.size() != b->steps.size()) return a->steps.size() > b->steps.size();
    return a->newest > b->newest;
  });
  if (!ordered.empty()) lines.push_back("Failed, by reason:");
  for (const Group* g : ordered) {
    std::string moves;
    for (std::size_t k = 0; k < g->steps.size() && k < kMaxMovesPerGroup; ++k)
      moves += (k ? "; " : "") + StepMove(*g->steps[k]);
    if (g->steps.size() > kMaxMovesPerGroup)
      moves += fmt::format("; +{} more", g->steps.size() - kMaxMovesPerGroup);
    lines.push_back(fmt::format(
        "- {} x{}: {} (moves: {})", g->outcome.empty() ? "failed" : g->outcome, g->steps.size(),
        g->reason.empty() ? "no reason recorded" : Shorten(g->reason), moves));
  }
  bool header = false;
  for (std::size_t i = steps_.size(); i-- > 0;) {
    const TrajectoryStep& s = steps_[i];
    if (s.outcome != "measured" || &s == best) continue;
    if (!header) lines.push_back("Other measured moves, newest first:");
    header = true;
    lines.push_back(fmt::format("- node {} (from {}): {} -> {:.2f}x{}", s.node, s.parent,
                                StepMove(s), s.speedup,
                                s.diagnosis.empty() ? "" : " [then: " + s.diagnosis + "]"));
  }

  // Whole lines while they fit; then one line that says how many were left out.
  std::string out;
  std::size_t kept = 0;
  for (; kept < lines.size(); ++kept) {
    if (out.size() + lines[kept].size() + 1 > max_chars) break;
    out += lines[kept] + "\n";
  }
  if (kept == lines.size()) return out;
  // Make room for the ellipsis line by dropping kept lines from the end.
  for (;;) {
    std::string more = fmt::format("... ({} more lines)\n", lines.size() - kept);
    if (out.size() + more.size() <= max_chars) return out + more;
    if (kept == 0) return max_chars >= 4 ? std::string("...\n") : std::string();
    --kept;
    out.erase(out.size() - lines[kept].size() - 1);
  }
}

Json Trajectory::ToJson() const {
  Json steps = Json::array();
  for (const TrajectoryStep& s : steps_)
    steps.push_back({{"node", s.node},
                     {"parent", s.parent},
                     {"move", s.move},
                     {"proposer", s.proposer},
                     {"outcome", s.outcome},
                     {"reason", s.reason},
                     {"speedup", s.speedup},
                     {"diagnosis", s.diagnosis}});
  return steps;
}

}  // namespace kopt
