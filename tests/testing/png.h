// Reading a PNG (8-bit RGB or RGBA, not interlaced: what Chromium writes) into
// pixels, for tests that check a screenshot.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kopt::testing {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
};

struct Image {
  int width = 0;
  int height = 0;
  std::vector<Rgb> pixels;  ///< row by row
  const Rgb& at(int x, int y) const { return pixels[static_cast<size_t>(y) * width + x]; }
};

/// Decodes the file; false with `*error` set when it cannot (not a PNG, a
/// bit depth or colour type other than 8-bit RGB/RGBA/grey, interlaced,
/// corrupt data).
bool ReadPng(const std::filesystem::path& path, Image* image, std::string* error);

/// "#2a9d4b" -> {42, 157, 75}.
Rgb ParseHexColor(const std::string& hex);

}  // namespace kopt::testing
