#include "propose/llm/extract.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace kopt {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  std::size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  std::size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

/// A fence line: up to three spaces, then three or more ` or ~.
bool FenceLine(const std::string& line, char* ch, std::size_t* len, std::string* info) {
  std::size_t i = 0;
  while (i < line.size() && i < 3 && line[i] == ' ') ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return false;
  char c = line[i];
  std::size_t n = 0;
  while (i + n < line.size() && line[i + n] == c) ++n;
  if (n < 3) return false;
  *ch = c;
  *len = n;
  *info = Trim(line.substr(i + n));
  return true;
}

bool LooksLikeSource(const std::string& text) {
  std::string t = Trim(text);
  for (const char* p : {"#include", "import ", "from ", "#pragma", "// ", "\"\"\"", "#!"})
    if (t.rfind(p, 0) == 0) return true;
  return false;
}

/// The code with comments and string literals blanked (C-like or Python).
std::string StripCommentsAndStrings(const std::string& code, bool python) {
  std::string out;
  out.reserve(code.size());
  for (std::size_t i = 0; i < code.size();) {
    if (!python && code.compare(i, 2, "//") == 0) {
      while (i < code.size() && code[i] != '\n') ++i;
    } else if (!python && code.compare(i, 2, "/*") == 0) {
      std::size_t e = code.find("*/", i + 2);
      i = e == std::string::npos ? code.size() : e + 2;
      out += ' ';
    } else if (python && code[i] == '#') {
      while (i < code.size() && code[i] != '\n') ++i;
    } else if (python && (code.compare(i, 3, "\"\"\"") == 0 || code.compare(i, 3, "'''") == 0)) {
      std::size_t e = code.find(code.substr(i, 3), i + 3);
      i = e == std::string::npos ? code.size() : e + 3;
      out += "\"\"";
    } else if (code[i] == '"' || (python && code[i] == '\'')) {
      char q = code[i++];
      while (i < code.size() && code[i] != q && code[i] != '\n') i += code[i] == '\\' ? 2 : 1;
      ++i;
      out += "\"\"";
    } else {
      out += code[i++];
    }
  }
  return out;
}

enum class Kind { kNone, kCuda, kHybrid };

Kind KindOf(const CodeBlock& b) {
  const std::string& l = b.lang;
  bool py = l == "python" || l == "py" || l == "python3";
  bool cu = l == "cuda" || l == "cu" || l == "c++" || l == "cpp" || l == "cxx" || l == "c" ||
            l == "cc" || l == "cuh";
  if (!cu && DefinesModelNew(b.code)) return Kind::kHybrid;
  if (!py && DefinesKoptForward(b.code)) return Kind::kCuda;
  return Kind::kNone;
}

/// Does the prose just before `offset` (the same paragraph) name the block final?
bool NamedFinal(const std::string& reply, std::size_t offset) {
  std::size_t from = offset > 200 ? offset - 200 : 0;
  std::string before = reply.substr(from, offset - from);
  while (!before.empty() && std::isspace(static_cast<unsigned char>(before.back())))
    before.pop_back();
  std::size_t para = before.rfind("\n\n");
  if (para != std::string::npos) before = before.substr(para);
  // A fence closing just before belongs to another block: only the prose after it counts.
  std::size_t fence = before.rfind("```");
  if (fence != std::string::npos) before = before.substr(fence + 3);
  static const std::regex kFinal(R"(\bfinal\b)", std::regex::icase);
  return std::regex_search(before, kFinal);
}

bool AssignsName(const std::string& code, const std::string& name) {
  std::regex re("(^|\\n)\\s*" + name + R"(\s*(:[^=\n]*)?=)");
  return std::regex_search(code, re);
}

}  // namespace

bool DefinesKoptForward(const std::string& code) {
  static const std::regex kDef(R"(\bkopt_forward\s*\([^;{}]*\)\s*\{)");
  return std::regex_search(StripCommentsAndStrings(code, false), kDef);
}

bool DefinesModelNew(const std::string& code) {
  static const std::regex kClass(R"((^|\n)class\s+ModelNew\s*[(:])");
  return std::regex_search(StripCommentsAndStrings(code, true), kClass);
}

std::vector<CodeBlock> FencedBlocks(const std::string& reply) {
  std::vector<CodeBlock> out;
  std::size_t pos = 0;
  bool inside = false;
  char ch = 0;
  std::size_t len = 0;
  CodeBlock cur;
  while (pos < reply.size()) {
    std::size_t nl = reply.find('\n', pos);
    std::size_t end = nl == std::string::npos ? reply.size() : nl;
    std::string line = reply.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    char c;
    std::size_t n;
    std::string info;
    if (!inside && FenceLine(line, &c, &n, &info)) {
      inside = true;
      ch = c;
      len = n;
      cur = CodeBlock{};
      cur.offset = pos;
      std::string first = Lower(info.substr(0, info.find_first_of(" \t{")));
      if (!first.empty() && first[0] == '.') first = first.substr(1);  // ```.cu
      // A file name as the tag: ```kernel.cu, ```model_new.py
      std::size_t dot = first.rfind('.');
      if (dot != std::string::npos) first = first.substr(dot + 1);
      cur.lang = first;
      cur.final = Lower(info).find("final") != std::string::npos || NamedFinal(reply, pos);
    } else if (inside && FenceLine(line, &c, &n, &info) && c == ch && n >= len && info.empty()) {
      inside = false;
      cur.closed = true;
      out.push_back(cur);
    } else if (inside) {
      cur.code += line;
      cur.code += '\n';
    }
    pos = end + 1;
  }
  if (inside) {
    cur.closed = false;
    out.push_back(cur);
  }
  if (out.empty() && LooksLikeSource(reply)) {
    CodeBlock b;
    b.code = reply;
    out.push_back(b);
  }
  return out;
}

Extraction ExtractCandidate(const std::string& reply) {
  Extraction x;
  static const std::regex kMove(R"((^|\n)\s*\**Move\**\s*:\**\s*([^\n]+))", std::regex::icase);
  std::smatch mm;
  if (std::regex_search(reply, mm, kMove)) x.move = Trim(mm[2].str());
  std::vector<CodeBlock> blocks = FencedBlocks(reply);
  x.blocks = static_cast<int>(blocks.size());
  if (blocks.empty()) {
    x.failure = reply.empty() ? "the reply was empty" : "the reply has no code block";
    return x;
  }
  x.truncated = !blocks.back().closed;
  int last_cuda = -1, last_py = -1, final_block = -1;
  for (int i = 0; i < static_cast<int>(blocks.size()); ++i) {
    const CodeBlock& b = blocks[i];
    if (!b.closed) continue;
    Kind k = KindOf(b);
    if (k == Kind::kCuda) last_cuda = i;
    if (k == Kind::kHybrid) last_py = i;
    if (k != Kind::kNone && b.final) final_block = i;
  }
  // A .cu block the Python uses as CUDA_SOURCE: any complete C/CUDA block.
  int cuda_text = last_cuda;
  if (cuda_text < 0)
    for (int i = 0; i < static_cast<int>(blocks.size()); ++i) {
      const std::string& l = blocks[i].lang;
      if (blocks[i].closed && (l == "cuda" || l == "cu" || l == "c++" || l == "cpp") &&
          blocks[i].code.find("__global__") != std::string::npos)
        cuda_text = i;
    }
  int pick = final_block >= 0 ? final_block : std::max(last_cuda, last_py);
  if (pick < 0) {
    if (x.truncated)
      x.failure = "the reply was cut off inside a code block, so it holds no complete candidate";
    else
      x.failure =
          "the reply's code blocks define neither kopt_forward (a .cu candidate) nor a "
          "ModelNew class (a hybrid candidate)";
    return x;
  }
  const CodeBlock& b = blocks[pick];
  Candidate c;
  c.kind = KindOf(b) == Kind::kCuda ? CandidateKind::kCuda : CandidateKind::kHybrid;
  c.source = b.code;
  {
    std::string which = b.final ? "the block named final" : "the last complete candidate block";
    x.chosen = which + " (" + (c.kind == CandidateKind::kCuda ? "cuda" : "python") + ", block " +
               std::to_string(pick + 1) + " of " + std::to_string(blocks.size()) + ")";
  }
  if (c.kind == CandidateKind::kHybrid && cuda_text >= 0 &&
      c.source.find("CUDA_SOURCE") != std::string::npos && !AssignsName(c.source, "CUDA_SOURCE")) {
    // The Python uses the reply's .cu block as CUDA_SOURCE: put it there,
    // after the imports at the top (so `kopt.load_cuda(CUDA_SOURCE)` works).
    std::string cu = blocks[cuda_text].code;
    std::string delim = cu.find("\"\"\"") == std::string::npos ? "\"\"\"" : "'''";
    std::string def = "CUDA_SOURCE = r" + delim + "\n" + cu + delim + "\n";
    std::size_t at = 0;
    std::size_t p = 0;
    while (p < c.source.size()) {
      std::size_t e = c.source.find('\n', p);
      if (e == std::string::npos) e = c.source.size();
      std::string line = Trim(c.source.substr(p, e - p));
      if (line.rfind("import ", 0) == 0 || line.rfind("from ", 0) == 0 || line.empty() ||
          line[0] == '#')
        at = std::min(e + 1, c.source.size());
      else
        break;
      p = e + 1;
    }
    c.source.insert(at, def);
    x.chosen += ", with block " + std::to_string(cuda_text + 1) + " as CUDA_SOURCE";
  }
  x.candidate = std::move(c);
  return x;
}

}  // namespace kopt
