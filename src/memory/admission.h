// The admission rule of long-term memory: which measured results become
// learned entries, and what such an entry says.
#pragma once

#include <string>

#include "memory/knowledge.h"

namespace kopt {

/// A learned entry needs the child at most this fraction of its parent's
/// time (at least 3% faster). kopt's medians of repeated CUDA-event timings
/// move by about 1-2% between runs of the same kernel on an H200 (clocks,
/// L2 state); a smaller "win" is as likely noise as a real effect, and
/// memory that learns noise would steer every later run wrong.
inline constexpr double kMaxAdmitTimeRatio = 0.97;

/// Why `win` may not be learned, in a few words ("not verified", "not
/// faster than its parent (0.98x)"); "" when it may.
std::string WhyNotAdmitted(const LearnedWin& win);

/// The learned entry's id: "learned-" and a hash of op class, normalized
/// move and task, so the same move on the same task is one entry.
std::string LearnedId(const LearnedWin& win);

/// The entry a win becomes: the move as its technique, the task's op class,
/// bottleneck and architecture as its structure, the gain (parent_ms /
/// child_ms) and the provenance ({"run", "node", "gpu"} from the win's own,
/// plus task, move, proposer, diagnosis, parent_ms, child_ms).
KnowledgeEntry LearnedEntry(const LearnedWin& win);

}  // namespace kopt
