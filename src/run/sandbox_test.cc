// The real Python worker (on cpu) started with WorkerOptions::sandbox_dir:
// it must report an isolated network and a Landlock-confined filesystem, and
// a candidate writing outside its scratch folder must get sandbox_violation.
// Where this machine cannot make a network namespace or lacks Landlock, the
// tests say so (skipped), never pass.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/worker_channel.h"
#include "testing/paths.h"

namespace kopt {
namespace {
namespace fs = std::filesystem;

// "" when a process here can create a network namespace (through a user
// namespace, or as root); probed in a child so this process is unchanged.
std::string NetnsUnavailable() {
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = ::unshare(CLONE_NEWUSER | CLONE_NEWNET);
    if (rc != 0 && ::geteuid() == 0) rc = ::unshare(CLONE_NEWNET);
    ::_exit(rc == 0 ? 0 : 1);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return "cannot fork to probe namespaces";
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "" : "this machine cannot create a network namespace";
}

std::string LandlockUnavailable() {
#if defined(__x86_64__) || defined(__aarch64__)
  long abi = ::syscall(444 /* landlock_create_ruleset */, nullptr, 0, 1u /* VERSION */);
  return abi > 0 ? "" : "this kernel has no usable Landlock";
#else
  return "Landlock probe not written for this architecture";
#endif
}

#define KOPT_REQUIRE_SANDBOX()                                         \
  do {                                                                 \
    if (std::string why = NetnsUnavailable(); !why.empty()) GTEST_SKIP() << why;    \
    if (std::string why = LandlockUnavailable(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

WorkerOptions Options(const fs::path& sandbox, std::vector<std::string>* warnings) {
  WorkerOptions o;
  o.device = "cpu";
  o.repo_root = testing::SourceDir();
  const char* py = std::getenv("KOPT_PYTHON");
  o.python = py && *py ? py : "/usr/bin/python3";
  o.start_timeout_s = 120;
  o.cache_dir = testing::ScratchDir("sandbox-cache");
  o.sandbox_dir = sandbox;
  o.on_warning = [warnings](const std::string& line) { warnings->push_back(line); };
  return o;
}

TEST(Sandbox, HelloReportsIsolationAndTheFolderIsRemovedAfterwards) {
  KOPT_REQUIRE_SANDBOX();
  fs::path scratch = testing::ScratchDir("sandbox") / "scratch";  // created by the worker channel
  std::vector<std::string> warnings;
  {
    auto worker = MakeProcessWorker(Options(scratch, &warnings));
    WorkerReply r = worker->Call(Json{{"op", "hello"}}, 120);
    ASSERT_TRUE(r.ok()) << r.message << r.stderr_tail;
    const Json& sb = r.body["sandbox"];
    ASSERT_TRUE(sb.is_object()) << r.body.dump(2);
    EXPECT_EQ(sb["network"], "isolated") << sb.dump(2);
    EXPECT_EQ(sb["filesystem"].get<std::string>().rfind("landlock v", 0), 0u) << sb.dump(2);
    EXPECT_EQ(sb["scratch"], fs::absolute(scratch).string());
    EXPECT_EQ(SandboxShortfall(sb), "");
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    EXPECT_TRUE(fs::is_directory(scratch));
  }
  EXPECT_FALSE(fs::exists(scratch));
}

TEST(Sandbox, WriteOutsideScratchIsASandboxViolation) {
  KOPT_REQUIRE_SANDBOX();
  fs::path outside = testing::ScratchDir("sandbox-outside");
  fs::path target = outside / "escaped.txt";
  fs::path config = outside / "escape.json";
  std::ofstream(config) << Json{{"write", {target.string()}}}.dump();
  ::setenv("KOPT_ESCAPE_CONFIG", config.c_str(), 1);  // read by the candidate
  std::vector<std::string> warnings;
  auto worker = MakeProcessWorker(Options(testing::ScratchDir("sandbox") / "scratch", &warnings));
  fs::path data = testing::SourceDir() / "python" / "tests" / "data";
  WorkerReply r = worker->Call(Json{{"op", "evaluate"},
                                    {"task", (data / "linear_relu.py").string()},
                                    {"candidate", {{"kind", "hybrid"}, {"path", (data / "linear_relu_write_escape.py").string()}}},
                                    {"seeds", {11}},
                                    {"timing", nullptr}},
                               120);
  ::unsetenv("KOPT_ESCAPE_CONFIG");
  EXPECT_EQ(r.status, WorkerReply::Status::kError) << r.body.dump(2);
  EXPECT_EQ(r.error_kind, "sandbox_violation") << r.message;
  EXPECT_FALSE(r.fatal);
  EXPECT_NE(r.message.find("outside its scratch directory"), std::string::npos) << r.message;
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(target.string() + ".libc"));
  EXPECT_TRUE(worker->Call(Json{{"op", "hello"}}, 60).ok());
  EXPECT_EQ(worker->starts(), 1);
}

TEST(Sandbox, NoFolderNoSandbox) {
  std::vector<std::string> warnings;
  auto worker = MakeProcessWorker(Options({}, &warnings));
  WorkerReply r = worker->Call(Json{{"op", "hello"}}, 120);
  ASSERT_TRUE(r.ok()) << r.message << r.stderr_tail;
  EXPECT_TRUE(r.body["sandbox"].is_null());
  EXPECT_TRUE(warnings.empty());
}

// A stand-in worker whose sandbox came out incomplete; it echoes its argv.
TEST(Sandbox, IncompleteSandboxWarnsOnceAndPassesTheFolder) {
  fs::path dir = testing::ScratchDir("sandbox-fake");
  fs::path script = dir / "fake-python";
  std::ofstream(script) << R"(#!/bin/sh
echo '{"event":"ready","pid":'$$',"sandbox":{"network":"unavailable: no namespaces here","filesystem":"landlock v7"}}'
while read line; do
  id=$(echo "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"op":"die"'*) exit 3 ;;
    *) echo '{"id":'$id',"ok":true,"argv":"'"$*"'"}' ;;
  esac
done
)";
  fs::permissions(script, fs::perms::owner_all);
  std::vector<std::string> warnings;
  WorkerOptions o = Options(dir / "scratch", &warnings);
  o.python = script.string();
  auto worker = MakeProcessWorker(o);
  WorkerReply r = worker->Call(Json{{"op", "hello"}}, 10);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_NE(r.body["argv"].get<std::string>().find("--sandbox " + fs::absolute(dir / "scratch").string()),
            std::string::npos)
      << r.body.dump();
  EXPECT_TRUE(fs::is_directory(dir / "scratch"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("no namespaces here"), std::string::npos) << warnings[0];
  worker->Call(Json{{"op", "die"}}, 10);
  EXPECT_TRUE(worker->Call(Json{{"op", "hello"}}, 10).ok());  // restarted
  EXPECT_EQ(worker->starts(), 2);
  EXPECT_EQ(warnings.size(), 1u);  // once per channel, not per start
}

TEST(Sandbox, ShortfallNamesWhatIsMissing) {
  EXPECT_EQ(SandboxShortfall(Json{{"network", "isolated"}, {"filesystem", "landlock v3"}}), "");
  std::string s = SandboxShortfall(Json{{"network", "unavailable: unshare: Operation not permitted"},
                                        {"filesystem", "landlock v7"}});
  EXPECT_NE(s.find("network not isolated"), std::string::npos);
  EXPECT_NE(s.find("Operation not permitted"), std::string::npos);
  EXPECT_NE(SandboxShortfall(Json{{"network", "isolated"}, {"filesystem", "unavailable: landlock unavailable"}})
                .find("writes not confined"),
            std::string::npos);
  EXPECT_NE(SandboxShortfall(Json()), "");
}

}  // namespace
}  // namespace kopt
