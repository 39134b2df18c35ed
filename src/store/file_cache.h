// The file cache seam: keyed JSON files under kopt's cache folder, in named
// collections — the measured ceilings of each GPU ("devices"), captured task
// bundles ("bundles") and candidates' saved profiles ("profiles"). One home
// for their paths, so the evaluator and `kopt profile` do not improvise them.
//
// An entry is <root>/<collection>/<key>.json; an entry of several files (a
// saved profile) is the folder <root>/<collection>/<key>/. A key is a
// relative path of plain names, such as "NVIDIA_H200-sm132-torch2.5.1/
// 04_softmax-0123456789abcdef"; the key functions below make them.
//
// A cache is only a cache: a read that finds the file missing, unreadable,
// not JSON or not what the caller expects is a miss (std::nullopt), never an
// error; the caller measures again. Writes go through a temporary file and a
// rename (core/json.h), so readers and concurrent writers (threads or
// processes) see a whole entry, the old one or a new one, never half of one.
#pragma once

#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>

#include "core/json.h"
#include "task/device.h"

namespace kopt {

enum class CacheCollection {
  kDevices,   ///< "devices": a GPU's measured ceilings (DeviceCacheKey)
  kBundles,   ///< "bundles": captured tasks with their baselines (BundleCacheKey)
  kProfiles,  ///< "profiles": candidates' saved profiles, a folder each (ProfileCacheKey)
};

/// The collection's folder: "devices", "bundles", "profiles".
const char* CacheCollectionName(CacheCollection c);

class FileCache {
 public:
  /// A cache under `root`, kopt's cache folder (core/paths.h). Nothing is
  /// created before the first write.
  explicit FileCache(std::filesystem::path root);

  const std::filesystem::path& root() const { return root_; }

  /// <root>/<collection>/<key>.json. Throws std::invalid_argument (a bug in
  /// the caller) when the key is empty, absolute, or has an empty, "." or
  /// ".." part.
  std::filesystem::path PathOf(CacheCollection c, const std::string& key) const;
  /// <root>/<collection>/<key>/, the folder of an entry of several files
  /// (not created). The same keys are refused as by PathOf.
  std::filesystem::path FolderOf(CacheCollection c, const std::string& key) const;

  /// The entry's JSON; nullopt when it is missing, unreadable or not JSON.
  std::optional<Json> Get(CacheCollection c, const std::string& key) const;

  /// The entry read through `parse` (Json -> T); nullopt also when `parse`
  /// throws: a damaged entry, or one an older kopt wrote, is a miss.
  template <class Parse>
  auto Get(CacheCollection c, const std::string& key, Parse parse) const
      -> std::optional<std::invoke_result_t<Parse, const Json&>> {
    std::optional<Json> j = Get(c, key);
    if (!j) return std::nullopt;
    try {
      return parse(*j);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  /// Writes the entry atomically (indented JSON), creating its folders.
  /// Throws kopt::Error, one sentence, when it cannot be written.
  void Put(CacheCollection c, const std::string& key, const Json& value) const;

 private:
  std::filesystem::path root_;
};

/// A GPU's ceilings: DeviceInfo::Key() ("NVIDIA_H200-sm132-torch2.5.1").
std::string DeviceCacheKey(const DeviceInfo& device);

/// A task captured on a device: "<device key>/<task file's stem>-<the first
/// 16 hex digits of content_hash>" (the hash of the task file and the bundle
/// format, so an edited task or a new format is captured again).
std::string BundleCacheKey(const DeviceInfo& device, const std::filesystem::path& task_file,
                           const std::string& content_hash);

/// A candidate's saved profile, a folder: "<task name>-<the first 16 hex
/// digits of the hash of its source>".
std::string ProfileCacheKey(const std::string& task_name, const std::string& source_hash);

/// The diagnosis JSON in a saved profile's folder: "<profile key>/diagnosis".
std::string ProfileDiagnosisKey(const std::string& profile_key);

}  // namespace kopt
