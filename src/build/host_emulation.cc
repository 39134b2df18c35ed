#include "build/host_emulation.h"

#include <cctype>
#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace kopt {
namespace {

bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The start of the callee expression that ends just before `end`
/// (`name`, `ns::name`, `name<T, 4>`), or npos.
size_t CalleeStart(const std::string& s, size_t end) {
  size_t i = end;
  while (i > 0 && std::isspace(static_cast<unsigned char>(s[i - 1]))) --i;
  if (i > 0 && s[i - 1] == '>') {  // template arguments
    int depth = 0;
    while (i > 0) {
      const char c = s[--i];
      if (c == '>') ++depth;
      if (c == '<' && --depth == 0) break;
    }
    if (depth != 0) return std::string::npos;
    while (i > 0 && std::isspace(static_cast<unsigned char>(s[i - 1]))) --i;
  }
  const size_t name_end = i;
  while (i > 0 && (IsIdent(s[i - 1]) || s[i - 1] == ':')) --i;
  return i == name_end ? std::string::npos : i;
}

/// The index of the parenthesis closing the one at `open`, or npos.
size_t Closing(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '"' || s[i] == '\'') {  // skip a literal
      const char q = s[i];
      for (++i; i < s.size() && s[i] != q; ++i)
        if (s[i] == '\\') ++i;
      continue;
    }
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0) return i;
  }
  return std::string::npos;
}

}  // namespace

/// The lines a host build compiles: without the branches of
/// `#ifndef KOPT_HOST_EMULATION` (kept: its `#else`) and of the `#else` of
/// `#ifdef KOPT_HOST_EMULATION`, so a template may keep its PTX for the GPU.
static std::string HostBranches(const std::string& cu) {
  static const std::regex kOpen(R"(^\s*#\s*if(n?def)?\b\s*(\w*))");
  static const std::regex kElse(R"(^\s*#\s*(else|elif)\b)");
  static const std::regex kEnd(R"(^\s*#\s*endif\b)");
  std::string out, line;
  std::istringstream in(cu);
  // Per open #if: whether it is on the macro and which branch is dropped.
  struct Level {
    bool ours = false;
    bool dropping = false;
  };
  std::vector<Level> stack;
  auto dropped = [&] {
    for (const Level& l : stack)
      if (l.dropping) return true;
    return false;
  };
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kOpen)) {
      Level l;
      l.ours = m[2].str() == "KOPT_HOST_EMULATION" && m[1].matched;
      l.dropping = l.ours && m[1].str() == "ndef";
      stack.push_back(l);
      continue;
    }
    if (!stack.empty() && std::regex_search(line, kElse)) {
      if (stack.back().ours) stack.back().dropping = !stack.back().dropping;
      continue;
    }
    if (!stack.empty() && std::regex_search(line, kEnd)) {
      stack.pop_back();
      continue;
    }
    if (!dropped()) out += line + "\n";
  }
  return out;
}

HostSource HostEmulationSource(const std::string& cu) {
  HostSource r;
  static const std::regex kAsm(R"((^|[^\w])(asm|__asm__)\s*(volatile\s*)?\()");
  const std::string host = HostBranches(cu);
  if (std::regex_search(host, kAsm)) {
    r.why_not = "it uses inline PTX (asm), which only a GPU runs";
    return r;
  }
  static const std::regex kInclude(R"(#\s*include\s*[<"]([^>"]+)[>"])");
  static const std::regex kNoStandIn(
      R"(^(cuda_fp8|cuda\.h|cublas|cudnn|cutlass|cute|mma\.h|cooperative_groups|cuda/|cuda_pipeline|nvrtc|curand).*)");
  for (auto it = std::sregex_iterator(host.begin(), host.end(), kInclude);
       it != std::sregex_iterator(); ++it) {
    const std::string header = (*it)[1].str();
    if (std::regex_match(header, kNoStandIn)) {
      r.why_not = "it includes <" + header + ">, which the host emulation has no stand-in for";
      return r;
    }
  }
  std::string s = cu;
  // extern __shared__ [__align__(N)] T name[];  ->  T* name = (T*)dynamic_smem();
  static const std::regex kExternShared(
      R"(extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_][\w:<>, ]*?)\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_]\w*)\s*\[\s*\]\s*;)");
  s = std::regex_replace(s, kExternShared,
                         "$1* const $2 = reinterpret_cast<$1*>(::kopt_host::dynamic_smem());");
  // Launches, last first so earlier offsets stay valid.
  std::vector<size_t> at;
  for (size_t p = s.find("<<<"); p != std::string::npos; p = s.find("<<<", p + 3)) at.push_back(p);
  for (auto it = at.rbegin(); it != at.rend(); ++it) {
    const size_t open3 = *it;
    const size_t close3 = s.find(">>>", open3 + 3);
    const size_t start = CalleeStart(s, open3);
    if (close3 == std::string::npos || start == std::string::npos) {
      r.why_not = "a kernel launch (<<<...>>>) could not be read";
      return r;
    }
    size_t paren = close3 + 3;
    while (paren < s.size() && std::isspace(static_cast<unsigned char>(s[paren]))) ++paren;
    const size_t close =
        paren < s.size() && s[paren] == '(' ? Closing(s, paren) : std::string::npos;
    if (close == std::string::npos) {
      r.why_not = "a kernel launch (<<<...>>>) has no argument list";
      return r;
    }
    const std::string callee = s.substr(start, open3 - start);
    const std::string config = s.substr(open3 + 3, close3 - open3 - 3);
    const std::string args = s.substr(paren, close - paren + 1);
    s.replace(start, close + 1 - start,
              fmt::format("::kopt_host::launch([&]() {{ {}{}; }}, {})", callee, args, config));
  }
  r.ok = true;
  r.source = std::move(s);
  return r;
}

std::vector<std::string> HostFlags(const std::string& include_dir) {
  // -fno-gnu-unique: a template kernel's __shared__ array is a static local
  // of an inline function, which g++ otherwise binds process-wide
  // (STB_GNU_UNIQUE, even across RTLD_LOCAL loads): two builds of one
  // template at different sizes in one process would share the first one's
  // array, and the larger one would write past it.
  std::vector<std::string> f = {"-std=c++20", "-O2", "-fPIC", "-shared",
                                "-pthread",   "-x",  "c++",   "-fno-gnu-unique"};
  if (!include_dir.empty()) {
    f.push_back("-I" + include_dir + "/kopt/host_cuda");
    f.push_back("-I" + include_dir);
  }
  f.push_back("-include");
  f.push_back("kopt/host_cuda.h");
  return f;
}

}  // namespace kopt
