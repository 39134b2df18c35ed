#include "build/ptxas_report.h"

#include <cxxabi.h>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <sstream>

namespace kopt {
namespace {

struct FrameSizes {
  long stack = 0;
  long spill_stores = 0;
  long spill_loads = 0;
};

long FirstNumber(const std::string& line, const std::regex& re) {
  std::smatch m;
  return std::regex_search(line, m, re) ? std::stol(m[1].str()) : 0;
}

void Apply(const FrameSizes& f, KernelResources* k) {
  k->stack_bytes = f.stack;
  k->spill_store_bytes = f.spill_stores;
  k->spill_load_bytes = f.spill_loads;
}

}  // namespace

std::string Demangle(const std::string& mangled) {
  // __cxa_demangle also decodes bare type names ("f" -> "float"), so only
  // symbols that are mangled at all are handed to it.
  if (mangled.rfind("_Z", 0) != 0) return mangled;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::vector<KernelResources> ParsePtxasReport(const std::string& log) {
  static const std::regex kEntry(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex kProperties(R"(Function properties for '?([^'\s]+)'?)");
  static const std::regex kStack(R"((\d+) bytes stack frame)");
  static const std::regex kSpillStores(R"((\d+) bytes spill stores)");
  static const std::regex kSpillLoads(R"((\d+) bytes spill loads)");
  static const std::regex kUsed(R"(Used (\d+) registers)");
  // Old toolkits (sm_1x) printed "16+16 bytes smem"; the second part is 0 elsewhere.
  static const std::regex kSmem(R"((\d+)(?:\+(\d+))? bytes smem)");
  static const std::regex kCmem(R"((\d+) bytes cmem\[\d+\])");

  std::vector<KernelResources> kernels;
  int current = -1;                           // the most recent entry function
  std::string context;                        // name of the latest entry / properties header
  bool want_frame = false;                    // the next frame-size line belongs to `context`
  std::map<std::string, FrameSizes> pending;  // properties seen before their entry

  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kEntry)) {
      KernelResources k;
      k.kernel = m[1].str();
      k.demangled = Demangle(k.kernel);
      k.arch = m[2].str();
      if (auto it = pending.find(k.kernel); it != pending.end()) {
        Apply(it->second, &k);
        pending.erase(it);
      }
      kernels.push_back(std::move(k));
      current = static_cast<int>(kernels.size()) - 1;
      context = kernels.back().kernel;
      want_frame = false;
    } else if (std::regex_search(line, m, kProperties)) {
      context = m[1].str();
      want_frame = true;
    } else if (want_frame && std::regex_search(line, kStack)) {
      FrameSizes f{FirstNumber(line, kStack), FirstNumber(line, kSpillStores),
                   FirstNumber(line, kSpillLoads)};
      if (current >= 0 && kernels[current].kernel == context) {
        Apply(f, &kernels[current]);
      } else {
        pending[context] = f;  // a device function, or an entry announced later
      }
      want_frame = false;
    } else if (std::regex_search(line, m, kUsed)) {
      // Only entries get a "Used" line; guard against one for another function.
      if (current < 0 || kernels[current].kernel != context) continue;
      KernelResources& k = kernels[current];
      k.registers = std::stoi(m[1].str());
      if (std::smatch s; std::regex_search(line, s, kSmem)) {
        k.smem_bytes = std::stol(s[1].str()) + (s[2].matched ? std::stol(s[2].str()) : 0);
      }
      k.cmem_bytes = 0;
      for (std::sregex_iterator it(line.begin(), line.end(), kCmem), end; it != end; ++it) {
        k.cmem_bytes += std::stol((*it)[1].str());
      }
    }
  }
  return kernels;
}

}  // namespace kopt
