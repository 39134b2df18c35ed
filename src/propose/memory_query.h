// What a proposer asks long-term memory (memory/knowledge.h) for: the task's
// op class read from its op graph, the bottleneck, the architecture and the
// parent's diagnoses as text; and opening the knowledge base a proposer reads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/diagnosis.h"
#include "memory/knowledge.h"
#include "propose/proposer.h"

namespace kopt {

/// A name of knowledge/vocabulary.json ("gemm", "norm", "reduce", ...) from the captured op
/// graph's operators (the heaviest kind present); "" when there is no graph.
std::string TaskOpClass(const TaskBundle* bundle);

/// The bottleneck to match: a diagnosis that names one, else the task's
/// floor bound ("memory", "compute", "latency"); "" when unknown.
std::string Bottleneck(const TaskBundle* bundle, const std::vector<Diagnosis>& diagnoses);

/// The query for a task and a parent's findings.
KnowledgeQuery MemoryQuery(const ProposeContext& context, const std::vector<Diagnosis>& diagnoses,
                           int limit = 5);

/// The knowledge base of `options` (knowledge_db, else DefaultMemoryPath;
/// curated entries from knowledge_dir), or null with `*why` when it cannot
/// be opened: a proposer works without memory rather than not at all.
std::unique_ptr<KnowledgeBase> OpenProposerMemory(const ProposerOptions& options, std::string* why);

}  // namespace kopt
