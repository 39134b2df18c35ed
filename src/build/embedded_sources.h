// The CUDA sources a hybrid (Python) candidate compiles when it loads:
// module-level raw string literals handed unchanged to kopt.load_cuda, so
// the loop can build them ahead, on the builder's pool, while the GPU times
// other candidates (the worker's own `kopt build` then finds them cached).
#pragma once

#include <string>
#include <vector>

namespace kopt {

struct EmbeddedSource {
  std::string variable;  ///< the module-level name the literal is bound to
  std::string name;      ///< load_cuda's name= argument, "" when not given
  std::string source;    ///< the literal's text, exactly as load_cuda writes it out
};

/// Every `kopt.load_cuda(NAME)` or `load_cuda(NAME, name="...")` call of
/// `python` whose NAME is bound once, at module level, to a raw
/// triple-quoted literal (`NAME = r"""..."""`). Sources specialised at run
/// time (a literal copied and edited before the call), calls with extra
/// flags and names bound more than once are left out: only what the worker
/// will build byte for byte is returned, each source once.
std::vector<EmbeddedSource> EmbeddedCudaSources(const std::string& python);

}  // namespace kopt
