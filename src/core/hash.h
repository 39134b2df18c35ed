// Content hashing for caches (compiled candidates, baselines, bundles).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace kopt {

/// 128-bit XXH3 of the parts (length-prefixed, so ("ab","c") != ("a","bc")),
/// as 32 lowercase hex digits.
std::string ContentHash(std::initializer_list<std::string_view> parts);

}  // namespace kopt
