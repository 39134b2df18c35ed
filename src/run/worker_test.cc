#include <fstream>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/error.h"
#include "run/worker_channel.h"
#include "testing/paths.h"

namespace kopt {
namespace {

// A stand-in worker speaking the protocol from a shell script: it answers
// normal ops, and hangs, dies or reports a fatal CUDA error on request.
std::string FakeWorker() {
  auto dir = testing::ScratchDir("fakeworker");
  auto path = dir / "fake-python";
  std::ofstream(path) << R"(#!/bin/sh
echo '{"event":"ready","pid":'$$'}'
while read line; do
  id=$(echo "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"op":"hang"'*) sleep 1000 ;;
    *'"op":"die"'*) echo "boom on stderr" >&2; exit 3 ;;
    *'"op":"fatal"'*) echo '{"id":'$id',"ok":false,"error":{"kind":"cuda_error","message":"an illegal memory access was encountered","fatal":true}}'; exit 3 ;;
    *'"op":"oom"'*) echo '{"id":'$id',"ok":false,"error":{"kind":"oom","message":"CUDA out of memory","fatal":false}}' ;;
    *) echo 'stray text is ignored'; echo '{"id":'$id',"ok":true,"pid":'$$'}' ;;
  esac
done
)";
  ::chmod(path.c_str(), 0755);
  return path.string();
}

WorkerOptions Options(const std::string& python) {
  WorkerOptions o;
  o.python = python;
  o.device = "cpu";
  o.repo_root = testing::SourceDir();
  o.start_timeout_s = 10;
  return o;
}

TEST(ProcessWorker, SurvivesHangDeathAndFatalErrors) {
  auto worker = MakeProcessWorker(Options(FakeWorker()));
  WorkerReply a = worker->Call(Json{{"op", "hello"}}, 5);
  ASSERT_TRUE(a.ok()) << a.message;
  int first_pid = a.body["pid"];

  WorkerReply hang = worker->Call(Json{{"op", "hang"}}, 0.5);
  EXPECT_EQ(hang.status, WorkerReply::Status::kTimeout);

  WorkerReply b = worker->Call(Json{{"op", "hello"}}, 5);  // restarted
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b.body["pid"].get<int>(), first_pid);

  WorkerReply die = worker->Call(Json{{"op", "die"}}, 5);
  EXPECT_EQ(die.status, WorkerReply::Status::kDied);
  EXPECT_NE(die.message.find("exit 3"), std::string::npos);
  EXPECT_NE(die.stderr_tail.find("boom"), std::string::npos);

  WorkerReply fatal = worker->Call(Json{{"op", "fatal"}}, 5);
  EXPECT_EQ(fatal.status, WorkerReply::Status::kError);
  EXPECT_EQ(fatal.error_kind, "cuda_error");
  EXPECT_TRUE(fatal.fatal);

  WorkerReply oom = worker->Call(Json{{"op", "oom"}}, 5);
  EXPECT_EQ(oom.error_kind, "oom");
  EXPECT_FALSE(oom.fatal);

  WorkerReply c = worker->Call(Json{{"op", "hello"}}, 5);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(worker->starts(), 4);  // first start + restarts after hang, death, fatal
}

TEST(ProcessWorker, PrewarmStartsInBackground) {
  auto worker = MakeProcessWorker(Options(FakeWorker()));
  worker->Prewarm();
  EXPECT_TRUE(worker->Call(Json{{"op", "hello"}}, 5).ok());
  EXPECT_EQ(worker->starts(), 1);
}

TEST(ProcessWorker, DeviceThatCannotOpenIsNamed) {
  auto dir = testing::ScratchDir("fakeworker-nodev");
  auto path = dir / "fake-python";
  std::ofstream(path) << "#!/bin/sh\necho '{\"event\":\"startup_failed\",\"error\":{\"kind\":\"internal\","
                         "\"message\":\"torch.cuda is not available\",\"fatal\":true}}'\nexit 2\n";
  ::chmod(path.c_str(), 0755);
  auto worker = MakeProcessWorker(Options(path.string()));
  try {
    worker->Call(Json{{"op", "hello"}}, 5);
    FAIL() << "expected kopt::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("could not open cpu (torch.cuda is not available)"), std::string::npos)
        << e.what();
  }
}

TEST(ProcessWorker, MissingPythonIsOneClearSentence) {
  auto worker = MakeProcessWorker(Options("/nonexistent/python3"));
  try {
    worker->Call(Json{{"op", "hello"}}, 5);
    FAIL() << "expected kopt::Error";
  } catch (const Error& e) {
    // The interpreter came from the options (--python): the advice names it.
    EXPECT_NE(std::string(e.what()).find("/nonexistent/python3: it does not exist"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("pass --python"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kopt
