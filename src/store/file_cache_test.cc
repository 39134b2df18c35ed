#include "store/file_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/json.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

DeviceInfo H200() {
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.sm_count = 132;
  d.torch_version = "2.5.1";
  return d;
}

void WriteText(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

class FileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = testing::ScratchDir("file-cache"); }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

// The paths the evaluator and `kopt profile` used before the seam: caches
// written by an earlier kopt keep working.
TEST_F(FileCacheTest, KeepsTheCacheFoldersLayout) {
  FileCache cache(root_);
  const std::string hash = "0123456789abcdef0123456789abcdef";
  EXPECT_EQ(cache.PathOf(CacheCollection::kDevices, DeviceCacheKey(H200())),
            root_ / "devices" / "NVIDIA_H200-sm132-torch2.5.1.json");
  EXPECT_EQ(
      cache.PathOf(CacheCollection::kBundles,
                   BundleCacheKey(H200(), "tasks/level1/04_softmax.py", hash)),
      root_ / "bundles" / "NVIDIA_H200-sm132-torch2.5.1" / "04_softmax-0123456789abcdef.json");
  const std::string profile = ProfileCacheKey("04_softmax", hash);
  EXPECT_EQ(cache.FolderOf(CacheCollection::kProfiles, profile),
            root_ / "profiles" / "04_softmax-0123456789abcdef");
  EXPECT_EQ(cache.PathOf(CacheCollection::kProfiles, ProfileDiagnosisKey(profile)),
            root_ / "profiles" / "04_softmax-0123456789abcdef" / "diagnosis.json");

  // An entry an earlier kopt wrote straight to the file reads as a hit.
  const Json ceilings{{"device", {{"name", "NVIDIA H200"}}}, {"ceilings", {{"dram_gbs", 4000}}}};
  WriteJsonFileAtomic(root_ / "devices" / "NVIDIA_H200-sm132-torch2.5.1.json", ceilings);
  EXPECT_EQ(cache.Get(CacheCollection::kDevices, DeviceCacheKey(H200())), ceilings);
}

TEST_F(FileCacheTest, HitsAndMisses) {
  FileCache cache(root_);
  EXPECT_FALSE(cache.Get(CacheCollection::kBundles, "dev/task-1"));  // no folder yet
  const Json value{{"flops", 1e9}, {"name", "softmax"}};
  cache.Put(CacheCollection::kBundles, "dev/task-1", value);
  EXPECT_TRUE(fs::exists(root_ / "bundles" / "dev" / "task-1.json"));
  EXPECT_EQ(cache.Get(CacheCollection::kBundles, "dev/task-1"), value);
  EXPECT_FALSE(cache.Get(CacheCollection::kBundles, "dev/task-2"));
  EXPECT_FALSE(cache.Get(CacheCollection::kDevices, "dev/task-1"));  // collections are apart
  cache.Put(CacheCollection::kBundles, "dev/task-1", Json{{"flops", 2e9}});  // replaces
  EXPECT_EQ(cache.Get(CacheCollection::kBundles, "dev/task-1"), (Json{{"flops", 2e9}}));

  auto flops = [](const Json& j) { return j.at("flops").get<double>(); };
  EXPECT_EQ(cache.Get(CacheCollection::kBundles, "dev/task-1", flops), 2e9);
  EXPECT_FALSE(cache.Get(CacheCollection::kBundles, "dev/task-2", flops));
}

// A damaged entry is a miss, never a crash: the caller measures again and
// writes it anew.
TEST_F(FileCacheTest, ACorruptEntryIsAMiss) {
  FileCache cache(root_);
  WriteText(cache.PathOf(CacheCollection::kDevices, "half"), "{\"ceilings\": {\"dram_gbs\": 40");
  WriteText(cache.PathOf(CacheCollection::kDevices, "empty"), "");
  WriteText(cache.PathOf(CacheCollection::kDevices, "binary"), std::string("\0\xff\xfe{", 4));
  fs::create_directories(cache.PathOf(CacheCollection::kDevices, "a-folder"));
  for (const char* key : {"half", "empty", "binary", "a-folder"})
    EXPECT_FALSE(cache.Get(CacheCollection::kDevices, key)) << key;

  // JSON that is not what the caller expects (an older format) is a miss too.
  cache.Put(CacheCollection::kDevices, "old", Json{{"peak", 1}});
  auto ceilings = [](const Json& j) { return j.at("ceilings").at("dram_gbs").get<double>(); };
  EXPECT_TRUE(cache.Get(CacheCollection::kDevices, "old"));
  EXPECT_FALSE(cache.Get(CacheCollection::kDevices, "old", ceilings));
  EXPECT_FALSE(cache.Get(CacheCollection::kDevices, "half", ceilings));

  // Writing over a corrupt entry repairs it.
  cache.Put(CacheCollection::kDevices, "half", Json{{"ceilings", {{"dram_gbs", 4000}}}});
  EXPECT_EQ(cache.Get(CacheCollection::kDevices, "half", ceilings), 4000);
}

TEST_F(FileCacheTest, RefusesKeysThatLeaveTheCollection) {
  FileCache cache(root_);
  for (const char* key : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/", "./a", "."})
    EXPECT_THROW(cache.PathOf(CacheCollection::kBundles, key), std::invalid_argument) << key;
  EXPECT_THROW(cache.Get(CacheCollection::kBundles, "../x"), std::invalid_argument);
  EXPECT_THROW(cache.FolderOf(CacheCollection::kProfiles, ".."), std::invalid_argument);
  EXPECT_NO_THROW(cache.PathOf(CacheCollection::kBundles, "dev/level1/04_softmax-0123"));
}

TEST_F(FileCacheTest, AnUnwritableCacheIsOneSentence) {
  WriteText(root_ / "devices", "a file where the folder should be");
  FileCache cache(root_);
  try {
    cache.Put(CacheCollection::kDevices, "x", Json::object());
    ADD_FAILURE() << "the write succeeded";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find("devices"), std::string::npos) << msg;
  }
}

// Two threads writing one entry over and over while a third reads it: every
// read sees one whole value, and no temporary file is left behind.
TEST_F(FileCacheTest, ConcurrentWritersNeverTearAnEntry) {
  FileCache cache(root_);
  const Json a{{"who", "a"}, {"pad", std::string(256 * 1024, 'a')}};
  const Json b{{"who", "b"}, {"pad", std::string(256 * 1024, 'b')}};
  cache.Put(CacheCollection::kBundles, "dev/task", a);
  std::atomic<bool> done{false};
  std::atomic<int> write_failures{0}, bad_reads{0}, reads{0};
  auto writer = [&](const Json& value) {
    for (int i = 0; i < 40; ++i) {
      try {
        cache.Put(CacheCollection::kBundles, "dev/task", value);
      } catch (const std::exception&) {
        ++write_failures;
      }
    }
  };
  std::thread reader([&] {
    while (!done) {
      std::optional<Json> got = cache.Get(CacheCollection::kBundles, "dev/task");
      if (!got || (*got != a && *got != b)) ++bad_reads;
      ++reads;
    }
  });
  std::thread ta(writer, a), tb(writer, b);
  ta.join();
  tb.join();
  done = true;
  reader.join();
  EXPECT_EQ(write_failures.load(), 0);
  EXPECT_EQ(bad_reads.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_GT(reads.load(), 0);
  std::optional<Json> last = cache.Get(CacheCollection::kBundles, "dev/task");
  ASSERT_TRUE(last);
  EXPECT_TRUE(*last == a || *last == b);
  for (const auto& e : fs::directory_iterator(root_ / "bundles" / "dev"))
    EXPECT_EQ(e.path().filename(), "task.json") << "left behind: " << e.path();
}

}  // namespace
}  // namespace kopt
