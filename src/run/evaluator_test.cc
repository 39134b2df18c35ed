// The evaluator keeps a GPU's ceilings in the file cache (store/file_cache.h),
// at the path earlier kopt versions used: measured once, read back by the
// next evaluator, measured again when the entry is damaged or on --refresh.
#include "run/evaluator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "run/worker_channel.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

// Answers hello and ceilings like a worker on a small GPU; counts the ops.
class ScriptedWorker : public WorkerChannel {
 public:
  WorkerReply Call(const Json& request, double timeout_s) override {
    const std::string op = request.value("op", "");
    ops.push_back(op);
    WorkerReply r;
    r.status = WorkerReply::Status::kOk;
    if (op == "hello") {
      r.body = {{"torch", "2.5.1"},
                {"device", {{"name", "Fake GPU"}, {"sm_count", 4}, {"available", true}}}};
    } else if (op == "ceilings") {
      r.body = {{"bandwidth", {{{"probe", "copy"}, {"bytes_per_s", 2e12}}}},
                {"matmul", Json::array()}};
    } else {
      r.status = WorkerReply::Status::kError;
      r.message = "not scripted: " + op;
    }
    return r;
  }
  int Count(const std::string& op) const {
    int n = 0;
    for (const auto& o : ops) n += o == op;
    return n;
  }
  std::vector<std::string> ops;
};

// How many times a fresh evaluator over `cache` measures the ceilings.
int Measures(const fs::path& cache, bool refresh = false) {
  ScriptedWorker worker;
  Evaluator e(nullptr, &worker, EvaluatorConfig{cache, refresh});
  EXPECT_EQ(e.DeviceCeilings().bandwidth_bytes_per_s, 2e12);
  e.DeviceCeilings();  // asked again: kept in the evaluator
  return worker.Count("ceilings");
}

TEST(EvaluatorCache, CeilingsAreMeasuredOncePerDevice) {
  const fs::path cache = testing::ScratchDir("evaluator-cache");
  const fs::path file = cache / "devices" / "Fake_GPU-sm4-torch2.5.1.json";
  EXPECT_EQ(Measures(cache), 1);
  ASSERT_TRUE(fs::exists(file));
  const Json entry = ReadJsonFile(file);
  EXPECT_EQ(entry["device"]["name"], "Fake GPU");
  EXPECT_EQ(entry["ceilings"]["bandwidth_bytes_per_s"], 2e12);

  EXPECT_EQ(Measures(cache), 0);                    // read back
  EXPECT_EQ(Measures(cache, /*refresh=*/true), 1);  // --refresh measures again

  std::ofstream(file, std::ios::trunc) << "{\"ceilings\": {\"bandwidth";  // damaged
  EXPECT_EQ(Measures(cache), 1);
  EXPECT_EQ(Measures(cache), 0);  // and written anew
  fs::remove_all(cache);
}

}  // namespace
}  // namespace kopt
