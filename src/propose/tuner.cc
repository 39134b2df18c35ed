// The knob tuner: wide, far-apart configurations near the root, one-step
// neighbours deeper down.
#include "propose/tuner.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/hash.h"
#include "propose/knobs.h"
#include "task/task_loader.h"

namespace kopt {
namespace {

constexpr char kName[] = "tune";

/// splitmix64, so proposals do not depend on the standard library's
/// distributions.
class Random {
 public:
  explicit Random(std::uint64_t seed = 1) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::size_t Below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(Next() % n); }
  template <class T>
  void Shuffle(std::vector<T>* v) {
    for (std::size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[Below(i)]);
  }

 private:
  std::uint64_t state_;
};

std::string DisplayName(const Candidate& c) {
  return c.path.empty() ? c.name : c.path.filename().string();
}

/// "04_softmax" from "04_softmax.cu" or "04_softmax[THREADS=256]".
std::string StemOf(const std::string& name) {
  std::string s = name.substr(0, name.find('['));
  const auto dot = s.rfind('.');
  if (dot != std::string::npos && dot > 0) s = s.substr(0, dot);
  return s;
}

std::size_t IndexOf(const Knob& k, long long v) {
  return static_cast<std::size_t>(std::lower_bound(k.values.begin(), k.values.end(), v) -
                                  k.values.begin());
}

/// L1 distance over knob positions, each scaled to [0, 1].
double Distance(const KnobSpace& space, const KnobConfig& a, const KnobConfig& b) {
  double d = 0;
  for (const Knob& k : space.knobs()) {
    if (k.values.size() < 2) continue;
    const double ia = static_cast<double>(IndexOf(k, a.at(k.name)));
    const double ib = static_cast<double>(IndexOf(k, b.at(k.name)));
    d += std::abs(ia - ib) / static_cast<double>(k.values.size() - 1);
  }
  return d;
}

/// The share of knobs whose value in `c` no anchor has: spreads wide moves
/// over each knob's values instead of piling into one corner.
double Novelty(const KnobSpace& space, const KnobConfig& c,
               const std::vector<KnobConfig>& anchors) {
  if (space.knobs().empty()) return 0;
  int fresh = 0;
  for (const Knob& k : space.knobs()) {
    const long long v = c.at(k.name);
    fresh += std::none_of(anchors.begin(), anchors.end(),
                          [&](const KnobConfig& a) { return a.at(k.name) == v; });
  }
  return static_cast<double>(fresh) / static_cast<double>(space.knobs().size());
}

Json ConfigJson(const KnobSpace& space, const KnobConfig& c) {
  Json j = Json::object();
  for (const Knob& k : space.knobs()) j[k.name] = c.at(k.name);
  return j;
}

class TuneProposer : public Proposer {
 public:
  explicit TuneProposer(const TunerOptions& options) : options_(options) {}

  std::string Name() const override { return kName; }

  void Begin(const ProposeContext& context) override {
    random_ = Random(context.seed);
    base_.reset();
    seen_.clear();
    children_.clear();
    spaces_.clear();
    notes_.clear();
    budget_ = context.budget;
    if (context.from) {
      KnobSpace space = KnobSpace::Parse(context.from->source, DisplayName(*context.from));
      if (space.empty())
        throw Error(fmt::format(
            "{} has no `// kopt:knob` lines: mark its knobs (docs/tuning.md) or tune another "
            "kernel.",
            DisplayName(*context.from)));
      base_.emplace(Base{*context.from, std::move(space)});
    } else {
      for (const Candidate& c : FindSolutions(context.task)) {
        KnobSpace space = KnobSpace::Parse(c.source, DisplayName(c));
        if (space.empty()) continue;
        base_.emplace(Base{c, std::move(space)});
        break;
      }
      if (!base_)
        throw Error(fmt::format(
            "task {} has no kernel with `// kopt:knob` lines: mark its knobs (docs/tuning.md) "
            "or pass --from.",
            context.task.name));
    }
    Note();
  }

  std::optional<Proposal> Root() override {
    if (!base_) return std::nullopt;
    const KnobSpace& space = base_->space;
    const KnobConfig defaults = space.Defaults();
    Proposal p;
    p.parent = -1;
    p.move = fmt::format("tune {} from its defaults", DisplayName(base_->candidate));
    p.candidate = base_->candidate;
    p.candidate.name = CandidateName(StemOf(DisplayName(base_->candidate)), space, defaults);
    p.expected = "the kernel as written: the tuner's starting point";
    p.proposer = kName;
    p.detail = Detail(DisplayName(base_->candidate), space, defaults, "root", {});
    seen_.insert(ContentHash({p.candidate.source}));
    return p;
  }

  std::vector<Proposal> Propose(const ParentView& parent, int n) override {
    std::vector<Proposal> out;
    if (!base_ || n <= 0) return out;
    // The loop decides when time is up (each task gets its first candidate
    // whatever is left); counted limits end proposing here too.
    if (budget_ && budget_->CountsExhausted()) return out;
    std::optional<Position> pos = Locate(parent);
    if (!pos) return out;
    const bool wide = parent.depth < options_.wide_depth;
    std::vector<KnobConfig> picks;
    if (pos->include_current && Fresh(*pos, parent, pos->config)) picks.push_back(pos->config);
    if (static_cast<int>(picks.size()) < n) {
      auto more = wide ? Wide(*pos, parent, n - static_cast<int>(picks.size()))
                       : Neighbours(*pos, parent, n - static_cast<int>(picks.size()));
      picks.insert(picks.end(), more.begin(), more.end());
    }
    for (const KnobConfig& c : picks)
      out.push_back(Make(*pos, parent, c, wide ? "wide" : "neighbour"));
    return out;
  }

  std::vector<std::string> Notes() const override { return notes_; }

 private:
  struct Base {
    Candidate candidate;
    KnobSpace space;
  };
  /// Where a parent stands: the space its source defines, its configuration.
  struct Position {
    const KnobSpace* space = nullptr;
    KnobConfig config;
    Candidate like;                ///< kind and name of the kernel being tuned
    std::string kernel;            ///< file name of the kernel being tuned
    std::string stem;              ///< for candidate names
    bool include_current = false;  ///< the parent is not this kernel (the reference)
  };

  void Note() {
    const KnobSpace& space = base_->space;
    std::vector<std::string> knobs;
    for (const Knob& k : space.knobs())
      knobs.push_back(fmt::format("{} ({} values)", k.name, k.values.size()));
    std::string count = fmt::format("{} configurations", space.Size());
    if (space.Size() <= static_cast<std::uint64_t>(options_.enumerate_limit))
      count += fmt::format(", {} valid", space.Enumerate(space.Size()).size());
    notes_.push_back(fmt::format("tune: {} with knobs {}; {} constraint(s); {}",
                                 DisplayName(base_->candidate), fmt::join(knobs, ", "),
                                 space.constraints().size(), count));
  }

  std::optional<Position> Locate(const ParentView& parent) {
    Position pos;
    if (parent.candidate && !parent.candidate->source.empty()) {
      const std::string hash = ContentHash({parent.candidate->source});
      auto it = spaces_.find(hash);
      if (it == spaces_.end()) {
        std::optional<KnobSpace> space;
        try {
          KnobSpace s = KnobSpace::Parse(parent.candidate->source, parent.candidate->name);
          if (!s.empty()) space = std::move(s);
        } catch (const Error&) {
          // A node made elsewhere with broken knob lines: nothing to tune there.
        }
        it = spaces_.emplace(hash, std::move(space)).first;
      }
      if (!it->second) return std::nullopt;
      pos.space = &*it->second;
      pos.config = pos.space->Defaults();
      pos.like = *parent.candidate;
      pos.kernel = parent.detail.contains("kernel") && parent.detail["kernel"].is_string()
                       ? parent.detail["kernel"].get<std::string>()
                       : DisplayName(*parent.candidate);
      pos.stem = StemOf(pos.kernel);
      return pos;
    }
    pos.space = &base_->space;
    pos.config = pos.space->Defaults();
    pos.like = base_->candidate;
    pos.kernel = DisplayName(base_->candidate);
    pos.stem = StemOf(pos.kernel);
    pos.include_current = true;
    return pos;
  }

  std::string Move(const Position& pos, const KnobConfig& to) const {
    std::vector<std::string> parts;
    for (const Knob& k : pos.space->knobs()) {
      const long long a = pos.config.at(k.name), b = to.at(k.name);
      if (a != b) parts.push_back(fmt::format("{} {} -> {}", k.name, a, b));
    }
    if (parts.empty())
      return fmt::format("tune {} at its defaults ({})", pos.kernel, pos.space->Describe(to));
    return fmt::format("{}", fmt::join(parts, ", "));
  }

  /// Not the parent itself (unless the parent is the reference), never
  /// proposed before in this run, not a move already made from the parent.
  bool Fresh(const Position& pos, const ParentView& parent, const KnobConfig& c) const {
    if (!pos.include_current && c == pos.config) return false;
    if (!pos.space->Valid(c)) return false;
    const std::string move = Move(pos, c);
    if (std::find(parent.tried_moves.begin(), parent.tried_moves.end(), move) !=
        parent.tried_moves.end())
      return false;
    return !seen_.count(ContentHash({pos.space->Apply(c)}));
  }

  /// Best-candidate sampling: each pick is the best of `diversity` random
  /// fresh configurations, scored by the distance to the parent and its
  /// earlier children plus the share of knob values none of them has.
  std::vector<KnobConfig> Wide(const Position& pos, const ParentView& parent, int n) {
    const KnobSpace& space = *pos.space;
    std::vector<KnobConfig> pool;
    if (space.Size() <= static_cast<std::uint64_t>(options_.enumerate_limit)) {
      pool = space.Enumerate(space.Size());
    } else {
      std::set<KnobConfig> drawn;
      for (int i = 0; i < options_.sample_pool; ++i) {
        if (auto c = space.Sample(random_.Next())) drawn.insert(*c);
      }
      pool.assign(drawn.begin(), drawn.end());
    }
    std::vector<KnobConfig> fresh;
    for (KnobConfig& c : pool) {
      if (c != pos.config && Fresh(pos, parent, c)) fresh.push_back(std::move(c));
    }
    std::vector<KnobConfig> anchors{pos.config};
    for (const KnobConfig& c : children_[parent.node]) {
      if (c.size() == pos.config.size()) anchors.push_back(c);
    }
    std::vector<KnobConfig> picks;
    const int tries = std::max(1, options_.diversity);
    while (static_cast<int>(picks.size()) < n && !fresh.empty()) {
      std::size_t best = 0;
      double best_d = -1;
      for (int t = 0; t < tries; ++t) {
        const std::size_t i = random_.Below(fresh.size());
        double d = 1e300;
        for (const KnobConfig& a : anchors) d = std::min(d, Distance(space, fresh[i], a));
        d += Novelty(space, fresh[i], anchors);
        if (d > best_d) {
          best_d = d;
          best = i;
        }
      }
      anchors.push_back(fresh[best]);
      picks.push_back(fresh[best]);
      fresh.erase(fresh.begin() + static_cast<std::ptrdiff_t>(best));
    }
    return picks;
  }

  /// One knob to its next valid value up or down; when none is left, two
  /// knobs one step each.
  std::vector<KnobConfig> Neighbours(const Position& pos, const ParentView& parent, int n) {
    const KnobSpace& space = *pos.space;
    const auto& knobs = space.knobs();
    std::vector<KnobConfig> single;
    for (const Knob& k : knobs) {
      const std::size_t at = IndexOf(k, pos.config.at(k.name));
      for (int dir : {+1, -1}) {
        for (long long i = static_cast<long long>(at) + dir;
             i >= 0 && i < static_cast<long long>(k.values.size()); i += dir) {
          KnobConfig c = pos.config;
          c[k.name] = k.values[static_cast<std::size_t>(i)];
          if (!space.Valid(c)) continue;
          if (Fresh(pos, parent, c)) single.push_back(std::move(c));
          break;  // the nearest valid value only, fresh or not
        }
      }
    }
    random_.Shuffle(&single);
    if (static_cast<int>(single.size()) >= n) {
      single.resize(static_cast<std::size_t>(n));
      return single;
    }
    std::vector<KnobConfig> pairs;
    for (std::size_t a = 0; a < knobs.size(); ++a) {
      for (std::size_t b = a + 1; b < knobs.size(); ++b) {
        const std::size_t ia = IndexOf(knobs[a], pos.config.at(knobs[a].name));
        const std::size_t ib = IndexOf(knobs[b], pos.config.at(knobs[b].name));
        for (int da : {+1, -1}) {
          for (int db : {+1, -1}) {
            const long long ja = static_cast<long long>(ia) + da,
                            jb = static_cast<long long>(ib) + db;
            if (ja < 0 || jb < 0 || ja >= static_cast<long long>(knobs[a].values.size()) ||
                jb >= static_cast<long long>(knobs[b].values.size()))
              continue;
            KnobConfig c = pos.config;
            c[knobs[a].name] = knobs[a].values[static_cast<std::size_t>(ja)];
            c[knobs[b].name] = knobs[b].values[static_cast<std::size_t>(jb)];
            if (Fresh(pos, parent, c)) pairs.push_back(std::move(c));
          }
        }
      }
    }
    random_.Shuffle(&pairs);
    for (KnobConfig& c : pairs) {
      if (static_cast<int>(single.size()) >= n) break;
      single.push_back(std::move(c));
    }
    return single;
  }

  std::string Expected(const Position& pos, const KnobConfig& to) const {
    std::vector<std::string> parts;
    for (const Knob& k : pos.space->knobs()) {
      const long long a = pos.config.at(k.name), b = to.at(k.name);
      if (a == b) continue;
      const std::string about =
          k.about.empty() ? "may change occupancy, memory parallelism or the tail of the grid"
                          : k.about;
      parts.push_back(fmt::format("{} {}: {}", k.name, b > a ? "up" : "down", about));
    }
    if (parts.empty()) return "the kernel as written";
    return fmt::format("{}", fmt::join(parts, "; "));
  }

  static std::string CandidateName(const std::string& stem, const KnobSpace& space,
                                   const KnobConfig& c) {
    return fmt::format("{}[{}]", stem, space.Describe(c));
  }

  static Json Detail(const std::string& kernel, const KnobSpace& space, const KnobConfig& c,
                     const char* mode, const std::vector<std::string>& changed) {
    Json d = Json::object();
    d["kernel"] = kernel;
    d["config"] = ConfigJson(space, c);
    d["mode"] = mode;
    d["changed"] = changed;
    return d;
  }

  Proposal Make(const Position& pos, const ParentView& parent, const KnobConfig& c,
                const char* mode) {
    Proposal p;
    p.parent = parent.node;
    p.move = Move(pos, c);
    p.candidate.kind = pos.like.kind;
    p.candidate.source = pos.space->Apply(c);
    p.candidate.name = CandidateName(pos.stem, *pos.space, c);
    p.expected = Expected(pos, c);
    p.proposer = kName;
    std::vector<std::string> changed;
    for (const Knob& k : pos.space->knobs()) {
      if (pos.config.at(k.name) != c.at(k.name)) changed.push_back(k.name);
    }
    p.detail = Detail(pos.kernel, *pos.space, c, mode, changed);
    seen_.insert(ContentHash({p.candidate.source}));
    children_[parent.node].push_back(c);
    return p;
  }

  TunerOptions options_;
  Random random_;
  Budget* budget_ = nullptr;
  std::optional<Base> base_;
  std::set<std::string> seen_;  ///< hashes of every source proposed (and the root's)
  std::map<int, std::vector<KnobConfig>> children_;  ///< configurations proposed per parent node
  std::map<std::string, std::optional<KnobSpace>> spaces_;  ///< parsed parent sources by hash
  std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<Proposer> MakeTuneProposer(const TunerOptions& options) {
  return std::make_unique<TuneProposer>(options);
}

}  // namespace kopt
