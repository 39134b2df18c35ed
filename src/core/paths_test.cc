#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/paths.h"

namespace kopt {
namespace {

// Sets (or unsets, with nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Paths, TheRunStoreFollowsTheCacheFolderUnlessKoptRunsIsSet) {
  ScopedEnv runs("KOPT_RUNS", std::nullopt), cache("KOPT_CACHE", std::nullopt),
      xdg("XDG_CACHE_HOME", std::nullopt), home("HOME", "/home/u");
  EXPECT_EQ(DefaultRunStorePath(), "/home/u/.cache/kopt/runs.db");
  {
    ScopedEnv x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(DefaultRunStorePath(), "/xdg/kopt/runs.db");
    ScopedEnv c("KOPT_CACHE", "/c");
    EXPECT_EQ(DefaultRunStorePath(), "/c/runs.db");
    ScopedEnv r("KOPT_RUNS", "/r/my.db");
    EXPECT_EQ(DefaultRunStorePath(), "/r/my.db");
  }
  ScopedEnv empty("KOPT_RUNS", "");  // set but empty: as if unset
  EXPECT_EQ(DefaultRunStorePath(), "/home/u/.cache/kopt/runs.db");
  EXPECT_EQ(DefaultRunStorePath("/given"), "/given/runs.db");
  EXPECT_EQ(DefaultCacheDir(), "/home/u/.cache/kopt");
}

}  // namespace
}  // namespace kopt
