#include "core/json.h"

#include <unistd.h>
#include <atomic>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace kopt {

std::string ReadTextFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot read " + path.string() + ": check that the file exists and is readable.");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteTextFileAtomic(const std::filesystem::path& path, const std::string& text) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  // One temporary file per call, not per process: two threads writing the
  // same path must not share (and truncate) each other's temporary file.
  static std::atomic<unsigned long long> counter{0};
  auto tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  std::error_code ec;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw Error("cannot write " + tmp.string() + ": check permissions and free disk space.");
    out << text;
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(tmp, ec);
      throw Error("writing " + tmp.string() + " failed: check free disk space.");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw Error("cannot replace " + path.string() + ": " + why + ".");
  }
}

double NumberOr(const Json& j, const char* key, double fallback) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

Json ReadJsonFile(const std::filesystem::path& path) {
  std::string text = ReadTextFile(path);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw Error(path.string() + " is not valid JSON (" + e.what() + "): fix or delete it.");
  }
}

void WriteJsonFileAtomic(const std::filesystem::path& path, const Json& value, int indent) {
  WriteTextFileAtomic(path, value.dump(indent) + "\n");
}

}  // namespace kopt
