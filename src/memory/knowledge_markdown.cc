// Knowledge entries as Markdown with front matter (knowledge/README.md): the
// parser for curated files and the writer `kopt memory export` uses.
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "core/error.h"
#include "memory/knowledge.h"

namespace kopt {
namespace {

enum class Field { kText, kList, kNumber, kJson };

// Every front-matter key and what it holds; any other key is a typo.
const std::map<std::string, Field>& Fields() {
  static const std::map<std::string, Field> fields = {
      {"title", Field::kText},        {"origin", Field::kText},
      {"op_classes", Field::kList},   {"bottlenecks", Field::kList},
      {"archs", Field::kList},        {"technique", Field::kText},
      {"applies_when", Field::kText}, {"expected_effect", Field::kText},
      {"pitfalls", Field::kText},     {"gain", Field::kNumber},
      {"provenance", Field::kJson}};
  return fields;
}

std::string Trim(const std::string& s) {
  std::size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  std::size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string Unquote(const std::string& s) {
  if (s.size() >= 2 &&
      ((s.front() == '"' && s.back() == '"') || (s.front() == '\'' && s.back() == '\'')))
    return s.substr(1, s.size() - 2);
  return s;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

[[noreturn]] void Fail(const std::string& id, int line, const std::string& what) {
  if (line > 0)
    throw Error(fmt::format(
        "Knowledge entry '{}', line {}: {}: fix it (the format is in knowledge/README.md).", id,
        line, what));
  throw Error(fmt::format(
      "Knowledge entry '{}': {}: fix it (the format is in knowledge/README.md).", id, what));
}

// "[a, b]" (flow) or the "- item" lines collected for a block list.
std::vector<std::string> ParseFlowList(const std::string& id, int line, const std::string& v) {
  if (v.size() < 2 || v.front() != '[' || v.back() != ']')
    Fail(id, line, "a list is written [a, b] or as '- item' lines below the key");
  std::vector<std::string> out;
  std::string inner = v.substr(1, v.size() - 2);
  std::istringstream in(inner);
  for (std::string item; std::getline(in, item, ',');) {
    item = Unquote(Trim(item));
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void Assign(KnowledgeEntry* e, const std::string& id, int line, const std::string& key, Field kind,
            const std::string& text, const std::vector<std::string>& list) {
  switch (kind) {
    case Field::kText:
      if (key == "title") e->title = text;
      if (key == "origin") e->origin = text;
      if (key == "technique") e->technique = text;
      if (key == "applies_when") e->applies_when = text;
      if (key == "expected_effect") e->expected_effect = text;
      if (key == "pitfalls") e->pitfalls = text;
      return;
    case Field::kList:
      if (key == "op_classes") e->op_classes = list;
      if (key == "bottlenecks") e->bottlenecks = list;
      if (key == "archs") e->archs = list;
      return;
    case Field::kNumber: {
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(v))
        Fail(id, line, "'" + key + "' is not a number");
      e->gain = v;
      return;
    }
    case Field::kJson:
      try {
        e->provenance = Json::parse(text.empty() ? "{}" : text);
      } catch (const Json::exception&) {
        Fail(id, line, "'" + key + "' is not JSON on one line");
      }
      if (!e->provenance.is_object()) Fail(id, line, "'" + key + "' is not a JSON object");
      return;
  }
}

bool IsContinuation(const std::string& line) {
  return line.size() >= 2 && line[0] == ' ' && line[1] == ' ';
}

// Writes one text field: on its line when it has no line breaks, else as
// indented continuation lines below the key.
void WriteText(std::string* out, const char* key, const std::string& value) {
  if (value.find('\n') == std::string::npos) {
    *out += fmt::format("{}: {}\n", key, value);
    return;
  }
  *out += fmt::format("{}:\n", key);
  for (const std::string& line : SplitLines(value)) *out += "  " + line + "\n";
}

std::string FlowList(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "]";
}

}  // namespace

bool ValidKnowledgeId(const std::string& id) {
  if (id.empty() || id.size() > 100 || !std::isalnum(static_cast<unsigned char>(id[0])))
    return false;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

KnowledgeEntry ParseKnowledgeMarkdown(const std::string& id, const std::string& text) {
  if (!ValidKnowledgeId(id))
    Fail(id, 0,
         "the id (the file's name without .md) may hold only lowercase letters, digits, '-' and "
         "'_'");
  std::vector<std::string> lines = SplitLines(text);
  std::size_t i = 0;
  while (i < lines.size() && Trim(lines[i]).empty()) ++i;
  if (i == lines.size() || Trim(lines[i]) != "---")
    Fail(id, 1, "it does not start with a '---' front-matter line");
  ++i;

  KnowledgeEntry e;
  e.id = id;
  std::map<std::string, int> seen;
  bool closed = false;
  while (i < lines.size()) {
    const std::string& raw = lines[i];
    int line_no = static_cast<int>(i) + 1;
    std::string t = Trim(raw);
    if (t == "---") {
      closed = true;
      ++i;
      break;
    }
    if (t.empty() || t[0] == '#') {
      ++i;
      continue;
    }
    if (IsContinuation(raw)) Fail(id, line_no, "an indented line that belongs to no key");
    std::size_t colon = raw.find(':');
    if (colon == std::string::npos) Fail(id, line_no, "expected 'key: value'");
    std::string key = Trim(raw.substr(0, colon));
    auto field = Fields().find(key);
    if (field == Fields().end()) {
      std::string known;
      for (const auto& [k, _] : Fields()) known += (known.empty() ? "" : ", ") + k;
      Fail(id, line_no, fmt::format("unknown key '{}' (known: {})", key, known));
    }
    if (seen.count(key))
      Fail(id, line_no, fmt::format("'{}' is given twice (first on line {})", key, seen[key]));
    seen[key] = line_no;
    std::string value = Trim(raw.substr(colon + 1));
    ++i;
    // Continuation lines: indented by two spaces (text) or "- item" (lists).
    std::vector<std::string> more;
    while (i < lines.size() &&
           (IsContinuation(lines[i]) ||
            (Trim(lines[i]).empty() && i + 1 < lines.size() && IsContinuation(lines[i + 1])))) {
      more.push_back(lines[i].size() >= 2 ? lines[i].substr(2) : "");
      ++i;
    }
    std::vector<std::string> list;
    std::string text_value = Unquote(value);
    if (field->second == Field::kList) {
      if (!more.empty()) {
        if (!value.empty())
          Fail(id, line_no, "a list is either [a, b] on the key's line or '- item' lines below it");
        for (std::size_t k = 0; k < more.size(); ++k) {
          std::string item = Trim(more[k]);
          if (item.empty()) continue;
          if (item[0] != '-')
            Fail(id, line_no + 1 + static_cast<int>(k), "a list item starts with '- '");
          item = Unquote(Trim(item.substr(1)));
          if (!item.empty()) list.push_back(item);
        }
      } else if (!value.empty()) {
        list = ParseFlowList(id, line_no, value);
      }
    } else if (!more.empty()) {
      std::string joined = text_value;
      for (const std::string& m : more) joined += (joined.empty() ? "" : "\n") + Trim(m);
      text_value = Trim(joined);
    }
    Assign(&e, id, line_no, key, field->second, text_value, list);
  }
  if (!closed) Fail(id, 0, "the front matter has no closing '---' line");

  std::string body;
  for (; i < lines.size(); ++i) body += lines[i] + "\n";
  std::size_t b = body.find_first_not_of("\n \t");
  std::size_t end = body.find_last_not_of("\n \t");
  e.body = b == std::string::npos ? "" : body.substr(b, end - b + 1);

  if (e.origin != "curated" && e.origin != "learned")
    Fail(id, seen.count("origin") ? seen["origin"] : 0, "origin is 'curated' or 'learned'");
  const std::map<std::string, const std::string*> required = {
      {"title", &e.title},
      {"technique", &e.technique},
      {"applies_when", &e.applies_when},
      {"expected_effect", &e.expected_effect},
      {"pitfalls", &e.pitfalls}};
  for (const char* name : kRequiredKnowledgeFields)
    if (required.at(name)->empty())
      Fail(id, 0, fmt::format("the required field '{}' is missing or empty", name));
  return e;
}

std::string KnowledgeToMarkdown(const KnowledgeEntry& e) {
  std::string out = "---\n";
  WriteText(&out, "title", e.title);
  if (e.origin != "curated") out += fmt::format("origin: {}\n", e.origin);
  out += fmt::format("op_classes: {}\n", FlowList(e.op_classes));
  out += fmt::format("bottlenecks: {}\n", FlowList(e.bottlenecks));
  out += fmt::format("archs: {}\n", FlowList(e.archs));
  WriteText(&out, "technique", e.technique);
  WriteText(&out, "applies_when", e.applies_when);
  WriteText(&out, "expected_effect", e.expected_effect);
  WriteText(&out, "pitfalls", e.pitfalls);
  if (e.origin == "learned" || e.gain != 0) out += fmt::format("gain: {}\n", e.gain);
  if (!e.provenance.empty()) out += fmt::format("provenance: {}\n", e.provenance.dump());
  out += "---\n";
  if (!e.body.empty()) out += "\n" + e.body + "\n";
  return out;
}

Json ToJson(const KnowledgeEntry& e) {
  Json j = {{"id", e.id},
            {"title", e.title},
            {"origin", e.origin},
            {"op_classes", e.op_classes},
            {"bottlenecks", e.bottlenecks},
            {"archs", e.archs},
            {"technique", e.technique},
            {"applies_when", e.applies_when},
            {"expected_effect", e.expected_effect},
            {"pitfalls", e.pitfalls},
            {"body", e.body}};
  if (e.origin == "learned" || e.gain != 0) j["gain"] = e.gain;
  if (!e.provenance.empty()) j["provenance"] = e.provenance;
  return j;
}

}  // namespace kopt
