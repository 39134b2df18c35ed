#include "core/hash.h"

#include <cstdint>
#include <cstdio>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kopt {

std::string ContentHash(std::initializer_list<std::string_view> parts) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  for (std::string_view p : parts) {
    uint64_t n = p.size();
    XXH3_128bits_update(state, &n, sizeof n);
    XXH3_128bits_update(state, p.data(), p.size());
  }
  XXH128_hash_t h = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx",
                static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

}  // namespace kopt
