#include "store/file_cache.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "core/error.h"

namespace kopt {
namespace fs = std::filesystem;
namespace {

// Refuses keys that would leave the collection's folder or name it itself.
void CheckKey(const std::string& key) {
  if (key.empty()) throw std::invalid_argument("a file cache key must not be empty");
  const fs::path p(key);
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory())
    throw std::invalid_argument("file cache key '" + key + "' must be a relative path");
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string::npos) end = key.size();
    const std::string part = key.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      throw std::invalid_argument("file cache key '" + key + "' has an empty, '.' or '..' part");
    start = end + 1;
  }
}

}  // namespace

const char* CacheCollectionName(CacheCollection c) {
  switch (c) {
    case CacheCollection::kDevices:
      return "devices";
    case CacheCollection::kBundles:
      return "bundles";
    case CacheCollection::kProfiles:
      return "profiles";
  }
  return "unknown";
}

FileCache::FileCache(fs::path root) : root_(std::move(root)) {}

fs::path FileCache::PathOf(CacheCollection c, const std::string& key) const {
  CheckKey(key);
  return root_ / CacheCollectionName(c) / (key + ".json");
}

fs::path FileCache::FolderOf(CacheCollection c, const std::string& key) const {
  CheckKey(key);
  return root_ / CacheCollectionName(c) / key;
}

std::optional<Json> FileCache::Get(CacheCollection c, const std::string& key) const {
  const fs::path file = PathOf(c, key);
  try {
    std::ifstream in(file, std::ios::binary);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return std::nullopt;
    Json j = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return std::nullopt;
    return j;
  } catch (const std::exception&) {  // an unreadable file is a miss too
    return std::nullopt;
  }
}

void FileCache::Put(CacheCollection c, const std::string& key, const Json& value) const {
  const fs::path file = PathOf(c, key);
  try {
    WriteJsonFileAtomic(file, value);
  } catch (const fs::filesystem_error& e) {  // its folder could not be made
    throw Error("cannot write " + file.string() + " (" + e.code().message() +
                "): check that the cache folder is writable, or pass --cache DIR.");
  }
}

std::string DeviceCacheKey(const DeviceInfo& device) { return device.Key(); }

std::string BundleCacheKey(const DeviceInfo& device, const fs::path& task_file,
                           const std::string& content_hash) {
  return device.Key() + "/" + task_file.stem().string() + "-" + content_hash.substr(0, 16);
}

std::string ProfileCacheKey(const std::string& task_name, const std::string& source_hash) {
  return task_name + "-" + source_hash.substr(0, 16);
}

std::string ProfileDiagnosisKey(const std::string& profile_key) {
  return profile_key + "/diagnosis";
}

}  // namespace kopt
