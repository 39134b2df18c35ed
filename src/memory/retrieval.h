// How retrieval ranks knowledge: the structured match of an entry against a
// query, and free text turned into a safe FTS5 query.
#pragma once

#include <string>

#include "memory/knowledge.h"

namespace kopt {

/// Weights of a specific (not wildcard) match per field: the op class says
/// most about whether a technique applies (a softmax trick for a softmax
/// beats a generic memory-bound tip), the bottleneck next.
inline constexpr int kOpClassWeight = 2;
inline constexpr int kBottleneckWeight = 1;

/// How an entry's structured fields meet a query.
struct StructuralMatch {
  /// A field the query names is excluded by the entry's list.
  bool excluded = false;
  /// The sum of the weights of the fields the entry names and matches (an
  /// empty list, a wildcard, adds 0): ranks before text.
  int relevance = 0;
  /// The entry lists the query's architecture. Ranks after text: an arch
  /// list says where a technique is available (wgmma needs sm_90), not that
  /// it is more to the point than a general one the text matches better.
  bool arch_specific = false;
};

StructuralMatch MatchStructure(const KnowledgeEntry& e, const KnowledgeQuery& q);

/// A roofline class and a family match each other ("memory" and
/// "memory.dram"), as do equal names.
bool BottleneckMatches(const std::string& entry, const std::string& query);
/// "sm_90" and "sm_90a" are one architecture for knowledge.
bool ArchMatches(const std::string& entry, const std::string& query);

/// Free text as an FTS5 MATCH expression: its words (letters, digits and
/// non-ASCII characters), lowercased, deduplicated, each quoted, joined by
/// OR, at most kMaxFtsTerms of them; "" when there are none. User text never
/// reaches MATCH raw, so quotes, '-', ':' or '*' cannot make a syntax error.
std::string FtsMatchExpression(const std::string& text);
inline constexpr int kMaxFtsTerms = 32;

}  // namespace kopt
