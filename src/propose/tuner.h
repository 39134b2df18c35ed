// The knob tuner ("tune"): a Proposer that searches the configurations of a
// kernel whose source marks its knobs (docs/tuning.md).
#pragma once

#include <memory>

#include "propose/proposer.h"

namespace kopt {

/// Tunes `context.from` when given, else the first of the task's shipped
/// solutions that has knobs. Root() is that kernel at its defaults. Children
/// of shallow parents (depth < wide_depth) are far-apart configurations that
/// change several knobs; deeper ones move one knob one step (to its next
/// valid value), then two knobs one step each. Never proposes a
/// configuration the constraints forbid or one it proposed before; the same
/// seed and the same calls give the same proposals.
std::unique_ptr<Proposer> MakeTuneProposer(const TunerOptions& options);

}  // namespace kopt
