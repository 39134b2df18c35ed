#include "testing/png.h"

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace kopt::testing {
namespace {

std::uint32_t Be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

int Paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

}  // namespace

bool ReadPng(const std::filesystem::path& path, Image* image, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> data((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (data.size() < 8 || !std::equal(kSignature, kSignature + 8, data.begin())) {
    *error = path.string() + " is not a PNG file";
    return false;
  }
  int width = 0, height = 0, color_type = -1, channels = 0;
  std::vector<unsigned char> compressed;
  for (size_t pos = 8; pos + 12 <= data.size();) {
    const std::uint32_t len = Be32(&data[pos]);
    const std::string type(reinterpret_cast<const char*>(&data[pos + 4]), 4);
    if (pos + 12 + len > data.size()) {
      *error = "truncated chunk " + type;
      return false;
    }
    const unsigned char* body = &data[pos + 8];
    if (type == "IHDR") {
      width = static_cast<int>(Be32(body));
      height = static_cast<int>(Be32(body + 4));
      const int depth = body[8];
      color_type = body[9];
      const int interlace = body[12];
      channels = color_type == 2 ? 3 : color_type == 6 ? 4 : color_type == 0 ? 1 : 0;
      if (depth != 8 || channels == 0 || interlace != 0) {
        *error = "unsupported PNG: bit depth " + std::to_string(depth) + ", colour type " +
                 std::to_string(color_type) + ", interlace " + std::to_string(interlace);
        return false;
      }
    } else if (type == "IDAT") {
      compressed.insert(compressed.end(), body, body + len);
    } else if (type == "IEND") {
      break;
    }
    pos += 12 + len;
  }
  if (width <= 0 || height <= 0) {
    *error = "no IHDR chunk";
    return false;
  }
  const size_t stride = static_cast<size_t>(width) * channels;
  std::vector<unsigned char> raw((stride + 1) * height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, compressed.data(), compressed.size()) != Z_OK ||
      raw_len != raw.size()) {
    *error = "the image data does not inflate to " + std::to_string(raw.size()) + " bytes";
    return false;
  }
  // Undo the per-row filters in place.
  std::vector<unsigned char> prev(stride, 0);
  for (int y = 0; y < height; ++y) {
    unsigned char* row = &raw[y * (stride + 1)];
    const int filter = row[0];
    unsigned char* cur = row + 1;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<size_t>(channels) ? cur[i - channels] : 0;
      const int b = prev[i];
      const int c = i >= static_cast<size_t>(channels) ? prev[i - channels] : 0;
      int v = cur[i];
      switch (filter) {
        case 0:
          break;
        case 1:
          v += a;
          break;
        case 2:
          v += b;
          break;
        case 3:
          v += (a + b) / 2;
          break;
        case 4:
          v += Paeth(a, b, c);
          break;
        default:
          *error = "unknown row filter " + std::to_string(filter);
          return false;
      }
      cur[i] = static_cast<unsigned char>(v);
    }
    std::copy(cur, cur + stride, prev.begin());
  }
  image->width = width;
  image->height = height;
  image->pixels.resize(static_cast<size_t>(width) * height);
  for (int y = 0; y < height; ++y) {
    const unsigned char* cur = &raw[y * (stride + 1) + 1];
    for (int x = 0; x < width; ++x) {
      const unsigned char* p = cur + static_cast<size_t>(x) * channels;
      Rgb& o = image->pixels[static_cast<size_t>(y) * width + x];
      if (channels == 1) {
        o = {p[0], p[0], p[0]};
      } else if (channels == 3) {
        o = {p[0], p[1], p[2]};
      } else {  // RGBA over white
        const int alpha = p[3];
        auto over = [alpha](int v) {
          return static_cast<std::uint8_t>((v * alpha + 255 * (255 - alpha)) / 255);
        };
        o = {over(p[0]), over(p[1]), over(p[2])};
      }
    }
  }
  return true;
}

Rgb ParseHexColor(const std::string& hex) {
  const std::string h = hex.size() == 7 && hex[0] == '#' ? hex.substr(1) : "000000";
  auto byte = [&](int i) {
    return static_cast<std::uint8_t>(std::stoi(h.substr(i, 2), nullptr, 16));
  };
  return {byte(0), byte(2), byte(4)};
}

}  // namespace kopt::testing
