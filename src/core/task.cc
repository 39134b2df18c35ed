#include "core/task.h"

namespace kopt {

const char* CandidateKindName(CandidateKind kind) {
  return kind == CandidateKind::kCuda ? "cuda" : "hybrid";
}

}  // namespace kopt
