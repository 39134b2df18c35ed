#include "profile/sass.h"

#include <regex>
#include <sstream>

#include "build/ptxas_report.h"

namespace kopt {
namespace {

std::string BaseOpcode(const std::string& opcode) {
  return opcode.substr(0, opcode.find('.'));
}

bool HasModifier(const std::string& opcode, const std::string& modifier) {
  std::string padded = opcode + ".";
  return padded.find("." + modifier + ".") != std::string::npos;
}

bool IsTensorMma(const std::string& base) {
  // HMMA, HGMMA, IMMA, IGMMA, DMMA, BMMA, QGMMA, OMMA, QMMA and Blackwell's
  // UTC*MMA all end in MMA; HFMA2.MMA has base HFMA2 and is not one.
  return base.size() > 3 && base.compare(base.size() - 3, 3, "MMA") == 0;
}

void Classify(const std::string& opcode, InstructionMix* mix) {
  const std::string base = BaseOpcode(opcode);
  ++mix->total;
  if (base == "LDG") {
    ++mix->global_loads.by_bits[AccessBits(opcode)];
  } else if (base == "STG") {
    ++mix->global_stores.by_bits[AccessBits(opcode)];
  } else if (base == "LDS" || base == "LDSM") {
    ++mix->shared_loads.by_bits[base == "LDSM" ? 128 : AccessBits(opcode)];
  } else if (base == "STS" || base == "STSM") {
    ++mix->shared_stores.by_bits[base == "STSM" ? 128 : AccessBits(opcode)];
  } else if (base == "LDL") {
    ++mix->local_loads.by_bits[AccessBits(opcode)];
  } else if (base == "STL") {
    ++mix->local_stores.by_bits[AccessBits(opcode)];
  } else if (base == "LD") {
    ++mix->generic_loads.by_bits[AccessBits(opcode)];
  } else if (base == "ST") {
    ++mix->generic_stores.by_bits[AccessBits(opcode)];
  } else if (base == "LDGSTS" || base == "UTMALDG" || base == "UBLKCP" || base == "UTMAPF") {
    ++mix->async_copies;
  } else if (IsTensorMma(base)) {
    ++mix->tensor_mma;
    if (base.size() > 4 && base.compare(base.size() - 4, 4, "GMMA") == 0) ++mix->warpgroup_mma;
    if (base.rfind("UTC", 0) == 0) ++mix->tcgen05_mma;
  } else if (base == "FFMA" || base == "FFMA2") {
    ++mix->ffma;
  } else if (base == "FADD" || base == "FADD2") {
    ++mix->fadd;
  } else if (base == "FMUL" || base == "FMUL2") {
    ++mix->fmul;
  } else if (base == "HFMA2") {
    ++mix->hfma2;
  } else if (base == "DFMA") {
    ++mix->dfma;
  } else if (base == "MUFU") {
    ++mix->mufu;
  } else if (base == "BAR") {
    ++mix->barriers;
  } else if (base == "BRA" || base == "BRX" || base == "JMP" || base == "JMX") {
    ++mix->branches;
  } else if (base == "SHFL") {
    ++mix->shuffles;
  } else if (base == "ATOM" || base == "ATOMG" || base == "ATOMS" || base == "RED" ||
             base == "REDG" || base == "REDUX" || base == "REDAS") {
    ++mix->atomics;
  }
}

Json ToJson(const WidthCounts& w) {
  Json j = Json::object();
  for (const auto& [bits, n] : w.by_bits) j[std::to_string(bits)] = n;
  return j;
}

}  // namespace

int WidthCounts::Total() const {
  int n = 0;
  for (const auto& [bits, count] : by_bits) n += count;
  return n;
}

int WidthCounts::AtLeast(int min_bits) const {
  int n = 0;
  for (const auto& [bits, count] : by_bits) {
    if (bits >= min_bits) n += count;
  }
  return n;
}

int AccessBits(const std::string& opcode) {
  if (HasModifier(opcode, "128")) return 128;
  if (HasModifier(opcode, "64")) return 64;
  if (HasModifier(opcode, "U16") || HasModifier(opcode, "S16")) return 16;
  if (HasModifier(opcode, "U8") || HasModifier(opcode, "S8")) return 8;
  return 32;
}

std::vector<SassFunction> ParseSass(const std::string& dump) {
  static const std::regex kFunction(R"(^\s*Function\s*:\s*(\S+))");
  static const std::regex kArch(R"((?:code for|arch =)\s*(sm_\w+))");
  // "        /*0040*/   @!P0 IADD3 R1, R1, -0x230, RZ ;   /* 0x... */"
  static const std::regex kInstruction(
      R"(^\s*/\*[0-9a-fA-F]+\*/\s+(?:\{\s*)?(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*))");
  std::vector<SassFunction> functions;
  std::string arch;
  std::istringstream in(dump);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kArch)) {
      arch = m[1].str();
    } else if (std::regex_search(line, m, kFunction)) {
      SassFunction f;
      f.name = m[1].str();
      f.demangled = Demangle(f.name);
      f.arch = arch;
      functions.push_back(std::move(f));
    } else if (!functions.empty() && std::regex_search(line, m, kInstruction)) {
      const std::string opcode = m[1].str();
      ++functions.back().opcodes[opcode];
      Classify(opcode, &functions.back().mix);
    }
  }
  return functions;
}

Json ToJson(const InstructionMix& mix) {
  return Json{{"total", mix.total},
              {"global_loads", ToJson(mix.global_loads)},
              {"global_stores", ToJson(mix.global_stores)},
              {"shared_loads", ToJson(mix.shared_loads)},
              {"shared_stores", ToJson(mix.shared_stores)},
              {"local_loads", ToJson(mix.local_loads)},
              {"local_stores", ToJson(mix.local_stores)},
              {"generic_loads", ToJson(mix.generic_loads)},
              {"generic_stores", ToJson(mix.generic_stores)},
              {"async_copies", mix.async_copies},
              {"tensor_mma", mix.tensor_mma},
              {"warpgroup_mma", mix.warpgroup_mma},
              {"tcgen05_mma", mix.tcgen05_mma},
              {"ffma", mix.ffma},
              {"fadd", mix.fadd},
              {"fmul", mix.fmul},
              {"hfma2", mix.hfma2},
              {"dfma", mix.dfma},
              {"mufu", mix.mufu},
              {"barriers", mix.barriers},
              {"branches", mix.branches},
              {"shuffles", mix.shuffles},
              {"atomics", mix.atomics}};
}

Json ToJson(const SassFunction& f) {
  return Json{{"name", f.name}, {"demangled", f.demangled}, {"arch", f.arch},
              {"mix", ToJson(f.mix)}, {"opcodes", f.opcodes}};
}

}  // namespace kopt
