// Knobs: the integer constants a kernel's source marks as tunable with
// `// kopt:knob` lines, the `// kopt:constraint` lines that keep every
// configuration correct, and rewriting a source to a configuration. The
// syntax is in docs/tuning.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "propose/knob_expr.h"

namespace kopt {

/// Knob name -> value. A configuration may leave knobs out: they keep their
/// defaults.
using KnobConfig = std::map<std::string, long long>;

struct Knob {
  std::string name;
  long long default_value = 0;
  std::vector<long long> values;  ///< ascending, no duplicates; holds the default
  std::string about;              ///< free text after the values: what the knob trades
  int line = 0;                   ///< 1-based line of its `kopt:knob` comment
  int value_line = 0;             ///< 1-based line of the value it sets
};

struct KnobConstraint {
  KnobExpr expr;
  int line = 0;
};

/// The knobs of one source and the configurations they allow.
class KnobSpace {
 public:
  /// Reads every `kopt:knob` and `kopt:constraint` line of `source` (a .cu,
  /// or a .py whose embedded CUDA strings carry them; it is all text).
  /// `file` names the source in messages. Throws kopt::Error, one sentence
  /// naming `file:line`, on a malformed line, a default that differs from
  /// the code, an unknown name in a constraint, or defaults that break a
  /// constraint. A source without knob lines gives an empty space.
  static KnobSpace Parse(const std::string& source, const std::string& file);

  bool empty() const { return knobs_.empty(); }
  const std::vector<Knob>& knobs() const { return knobs_; }
  const std::vector<KnobConstraint>& constraints() const { return constraints_; }
  const Knob* Find(const std::string& name) const;
  const std::string& file() const { return file_; }
  const std::string& source() const { return source_; }

  /// Every knob at its default (the source as written).
  KnobConfig Defaults() const;
  /// `config` with the knobs it leaves out set to their defaults.
  KnobConfig Complete(const KnobConfig& config) const;
  /// Why `config` is not allowed ("THREADS=2048 is not one of its values",
  /// "breaks `THREADS*ILP <= 4096` (line 12)"), or "" when it is.
  std::string Check(const KnobConfig& config) const;
  bool Valid(const KnobConfig& config) const { return Check(config).empty(); }

  /// Configurations before constraints: the product of the value counts
  /// (saturates at UINT64_MAX).
  std::uint64_t Size() const;
  /// The valid configurations in odometer order (the last knob changes
  /// fastest), visiting at most `max_visits` of the Size() configurations.
  std::vector<KnobConfig> Enumerate(std::uint64_t max_visits = 1 << 16) const;
  /// A valid configuration drawn uniformly from the values of each knob,
  /// determined by `seed`; nullopt when `tries` draws break a constraint.
  std::optional<KnobConfig> Sample(std::uint64_t seed, int tries = 64) const;

  /// The source at `config` (see ApplyKnobs). Throws kopt::Error when
  /// `config` names a knob the source lacks or is not Valid.
  std::string Apply(const KnobConfig& config) const;
  /// "THREADS=256,ILP=2": every knob, in the order of the source.
  std::string Describe(const KnobConfig& config) const;

 private:
  /// Where a knob's two value tokens lie in source_ (byte offsets).
  struct Site {
    std::size_t value_pos = 0, value_len = 0;      ///< the value in the code
    std::size_t default_pos = 0, default_len = 0;  ///< DEFAULT on the knob line
  };
  std::string source_;
  std::string file_;
  std::vector<Knob> knobs_;
  std::vector<Site> sites_;  ///< parallel to knobs_
  std::vector<KnobConstraint> constraints_;
};

/// Rewrites `source` to `config`. For each knob, exactly two tokens change:
/// the value in the code and the DEFAULT on its knob line, so the result is
/// itself a marked kernel whose defaults are `config`. Knobs left out keep
/// their values; nothing else in the text changes. Throws kopt::Error (one
/// sentence naming `file`) on a malformed knob line, an unknown knob or a
/// configuration the constraints forbid.
std::string ApplyKnobs(const std::string& source, const KnobConfig& config,
                       const std::string& file = "kernel");

}  // namespace kopt
