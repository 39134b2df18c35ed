// Long-term memory learned from a run: every verified, measured child that
// beat its parent is offered to the knowledge base with its provenance (run,
// node, GPU); KnowledgeBase::Admit decides what is kept.
#pragma once

#include <string>
#include <vector>

#include "memory/knowledge.h"
#include "store/run_store.h"

namespace kopt {

/// The measured children of a task of a run that were faster than their
/// parent (the reference's eager time for children of the root), as wins to
/// offer. Failed, unmeasured and slower children are not offered.
std::vector<LearnedWin> LearnedWins(const RunStore& store, const std::string& run_id,
                                    int task_index);

struct LearnedSummary {
  int offered = 0;
  int admitted = 0;
  std::vector<Admission> admissions;  ///< one per win offered, in order
};

/// Offers every task's wins of `run_id` to `kb`.
LearnedSummary AdmitLearnedWins(const RunStore& store, const std::string& run_id,
                                KnowledgeBase* kb);

}  // namespace kopt
