#include "memory/retrieval.h"

#include <algorithm>
#include <set>

namespace kopt {
namespace {

std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// -1: excluded; 0: wildcard or no preference; `weight`: a specific match.
template <class Match>
int FieldScore(const std::vector<std::string>& list, const std::string& query, int weight,
               Match match) {
  if (query.empty() || list.empty()) return 0;
  for (const std::string& v : list)
    if (match(Lower(v), Lower(query))) return weight;
  return -1;
}

}  // namespace

bool BottleneckMatches(const std::string& entry, const std::string& query) {
  if (entry == query) return true;
  auto family_of = [](const std::string& family, const std::string& cls) {
    return cls.size() > family.size() && cls.compare(0, family.size(), family) == 0 &&
           cls[family.size()] == '.';
  };
  return family_of(entry, query) || family_of(query, entry);
}

bool ArchMatches(const std::string& entry, const std::string& query) {
  auto base = [](std::string s) {
    if (s.size() > 3 && s.back() == 'a') s.pop_back();
    return s;
  };
  return base(entry) == base(query);
}

StructuralMatch MatchStructure(const KnowledgeEntry& e, const KnowledgeQuery& q) {
  auto equal = [](const std::string& a, const std::string& b) { return a == b; };
  int op = FieldScore(e.op_classes, q.op_class, kOpClassWeight, equal);
  int bn = FieldScore(e.bottlenecks, q.bottleneck, kBottleneckWeight, BottleneckMatches);
  int arch = FieldScore(e.archs, q.arch, 1, ArchMatches);
  StructuralMatch m;
  m.excluded = op < 0 || bn < 0 || arch < 0;
  if (!m.excluded) {
    m.relevance = op + bn;
    m.arch_specific = arch > 0;
  }
  return m;
}

std::string FtsMatchExpression(const std::string& text) {
  std::vector<std::string> terms;
  std::set<std::string> seen;
  std::string word;
  auto flush = [&] {
    if (!word.empty() && static_cast<int>(terms.size()) < kMaxFtsTerms && seen.insert(word).second)
      terms.push_back(word);
    word.clear();
  };
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    bool word_char =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
    if (word_char)
      word += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    else
      flush();
  }
  flush();
  std::string expr;
  for (const std::string& t : terms) expr += (expr.empty() ? "\"" : " OR \"") + t + "\"";
  return expr;
}

}  // namespace kopt
