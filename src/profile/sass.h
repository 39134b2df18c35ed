// Static instruction mix of each kernel from `cuobjdump --dump-sass` output.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/json.h"

namespace kopt {

/// Memory instructions of one kind by access width in bits (8, 16, 32, 64,
/// 128); counts are static (instructions in the code, not executions).
struct WidthCounts {
  std::map<int, int> by_bits;
  int Total() const;
  /// Instructions of `bits` or wider.
  int AtLeast(int bits) const;
};

/// What an optimizer wants to know about one function's SASS.
struct InstructionMix {
  int total = 0;
  WidthCounts global_loads;   ///< LDG (incl. .CONSTANT)
  WidthCounts global_stores;  ///< STG
  WidthCounts shared_loads;   ///< LDS, LDSM (ldmatrix)
  WidthCounts shared_stores;  ///< STS
  WidthCounts local_loads;    ///< LDL (spills, run-time-indexed arrays)
  WidthCounts local_stores;   ///< STL
  WidthCounts generic_loads;  ///< LD (generic address space)
  WidthCounts generic_stores; ///< ST
  int async_copies = 0;       ///< LDGSTS (cp.async) and UTMALDG/UBLKCP (TMA)
  int tensor_mma = 0;         ///< HMMA, HGMMA, IMMA, DMMA, QGMMA, ... (tensor cores)
  int warpgroup_mma = 0;      ///< of those, Hopper's warpgroup MMA (wgmma: HGMMA, IGMMA, QGMMA, ...)
  int tcgen05_mma = 0;        ///< of those, Blackwell's tensor-memory MMA (UTC*MMA)
  int ffma = 0, fadd = 0, fmul = 0;
  int hfma2 = 0;              ///< packed half FMA (HFMA2, incl. HFMA2.MMA moves)
  int dfma = 0;               ///< fp64
  int mufu = 0;               ///< special functions (exp2, lg2, rsq, rcp, sin, cos)
  int barriers = 0;           ///< BAR
  int branches = 0;           ///< BRA, BRX, JMP
  int shuffles = 0;           ///< SHFL
  int atomics = 0;            ///< ATOM, ATOMG, ATOMS, RED, REDG
};

struct SassFunction {
  std::string name;       ///< as cuobjdump prints it (mangled for C++)
  std::string demangled;
  std::string arch;       ///< e.g. "sm_90"
  std::map<std::string, int> opcodes;  ///< full opcode with modifiers -> count
  InstructionMix mix;
};

/// One entry per "Function : name" block, in dump order; a function compiled
/// for two architectures appears twice. Unknown lines are ignored, so any text
/// parses without failing (an empty result means no SASS was found).
std::vector<SassFunction> ParseSass(const std::string& dump);

/// "LDG.E.128.CONSTANT" -> 128, "LDS.U8" -> 8, "STG.E" -> 32.
int AccessBits(const std::string& opcode);

Json ToJson(const InstructionMix& mix);
Json ToJson(const SassFunction& f);

}  // namespace kopt
