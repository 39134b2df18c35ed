// The real WorkerChannel: one Python worker process, restarted on failure.
#include <atomic>
#include <future>
#include <mutex>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/subprocess.h"
#include "run/worker_channel.h"

namespace kopt {
namespace fs = std::filesystem;
namespace {

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string LastLines(const std::string& text, int n) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  size_t pos = t.size();
  for (int i = 0; i < n; ++i) {
    size_t nl = pos == 0 ? std::string::npos : t.rfind('\n', pos - 1);
    if (nl == std::string::npos) return t;
    pos = nl;
  }
  return t.substr(pos + 1);
}

class ProcessWorker : public WorkerChannel {
 public:
  explicit ProcessWorker(WorkerOptions options) : options_(std::move(options)) {}
  ~ProcessWorker() override {
    if (start_.valid()) start_.wait();
    if (child_.Running()) {
      child_.WriteLine(R"({"id":0,"op":"shutdown"})");
      std::string line;
      child_.ReadLine(&line, std::chrono::steady_clock::now() + std::chrono::seconds(2));
    }
    child_.Kill();
  }

  void Prewarm() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!child_.Running() && !start_.valid())
      start_ = std::async(std::launch::async, [this] { return Start(); });
  }

  int starts() const override { return starts_; }

  WorkerReply Call(const Json& request, double timeout_s) override {
    std::string start_error;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (start_.valid()) start_error = start_.get();
      else if (!child_.Running()) start_error = Start();
    }
    if (!start_error.empty()) throw Error(start_error);

    WorkerReply reply;
    auto t0 = std::chrono::steady_clock::now();
    Json req = request;
    req["id"] = ++next_id_;
    if (!child_.WriteLine(req.dump())) {
      reply.status = WorkerReply::Status::kDied;
      reply.message = "the worker's stdin closed (" + child_.ExitDescription() + ")";
      reply.stderr_tail = child_.StderrTail();
      child_.Kill();
      return reply;
    }
    auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(timeout_s));
    std::string line;
    for (;;) {
      auto st = child_.ReadLine(&line, deadline);
      if (st == LineChild::ReadStatus::kTimeout) {
        reply.status = WorkerReply::Status::kTimeout;
        reply.wall_s = Since(t0);
        reply.message = "no reply within " + std::to_string(static_cast<int>(timeout_s)) + " s";
        child_.Kill();
        reply.stderr_tail = child_.StderrTail();
        return reply;
      }
      if (st == LineChild::ReadStatus::kClosed) {
        // Give the process a moment to be reaped for its exit status.
        for (int i = 0; i < 50 && child_.Running(); ++i) ::usleep(10000);
        reply.status = WorkerReply::Status::kDied;
        reply.wall_s = Since(t0);
        reply.message = "the worker died (" + child_.ExitDescription() + ")";
        reply.stderr_tail = child_.StderrTail();
        child_.Kill();
        return reply;
      }
      Json msg;
      try {
        msg = Json::parse(line);
      } catch (const Json::parse_error&) {
        spdlog::debug("worker: ignoring non-JSON line: {}", line);
        continue;
      }
      if (!msg.contains("id") || msg["id"] != req["id"]) continue;  // stale or event
      reply.wall_s = Since(t0);
      reply.body = std::move(msg);
      if (reply.body.value("ok", false)) {
        reply.status = WorkerReply::Status::kOk;
      } else {
        reply.status = WorkerReply::Status::kError;
        const Json& e = reply.body.contains("error") ? reply.body["error"] : Json::object();
        reply.error_kind = e.value("kind", "internal");
        reply.message = e.value("message", "");
        reply.fatal = e.value("fatal", false);
        if (reply.fatal) {
          // The worker exits by itself; make sure, and collect its stderr.
          for (int i = 0; i < 200 && child_.Running(); ++i) ::usleep(10000);
          child_.Kill();
          reply.stderr_tail = child_.StderrTail();
        }
      }
      return reply;
    }
  }

 private:
  std::vector<std::string> PythonCandidates() const {
    if (!options_.python.empty()) return {options_.python};
    if (const char* p = std::getenv("KOPT_PYTHON"); p && *p) return {p};
    return {"python3", "/usr/bin/python3"};
  }

  // Returns "" on success, else one sentence for the user.
  std::string Start() {
    ProcessOptions po;
    fs::path root = options_.repo_root;
    po.env["PYTHONPATH"] = (root / "python").string();
    po.env["PYTHONUNBUFFERED"] = "1";
    po.env["KOPT_INCLUDE"] = (root / "include").string();
    if (!options_.cache_dir.empty()) po.env["KOPT_CACHE"] = (options_.cache_dir / "so").string();
    if (!options_.nvcc.empty()) po.env["KOPT_NVCC"] = options_.nvcc;
    if (!options_.arch.empty()) po.env["KOPT_ARCH"] = options_.arch;
    std::string tried;
    for (const std::string& python : PythonCandidates()) {
      auto t0 = std::chrono::steady_clock::now();
      if (!child_.Start({python, "-m", "kopt.worker", "--device", options_.device}, po)) {
        tried += python + ": " + child_.error() + "; ";
        continue;
      }
      ++starts_;
      auto deadline = t0 + std::chrono::seconds(static_cast<int>(options_.start_timeout_s));
      std::string line;
      for (;;) {
        auto st = child_.ReadLine(&line, deadline);
        if (st != LineChild::ReadStatus::kLine) break;
        try {
          Json msg = Json::parse(line);
          if (msg.value("event", "") == "ready") {
            spdlog::debug("worker {} ready in {:.2f} s", python, Since(t0));
            return "";
          }
        } catch (const Json::parse_error&) {
        }
      }
      child_.Kill();
      tried += python + ": " + LastLines(child_.StderrTail(), 2) + "; ";
    }
    return "could not start the evaluation worker (" + tried +
           "): install PyTorch for python3 or set KOPT_PYTHON to a Python that has it.";
  }

  WorkerOptions options_;
  LineChild child_;
  std::mutex mu_;
  std::future<std::string> start_;
  std::atomic<int> starts_{0};
  long next_id_ = 0;
};

}  // namespace

std::unique_ptr<WorkerChannel> MakeProcessWorker(const WorkerOptions& options) {
  return std::make_unique<ProcessWorker>(options);
}

fs::path FindRepoRoot() {
  auto is_root = [](const fs::path& p) { return fs::exists(p / "python" / "kopt" / "worker.py"); };
  if (const char* env = std::getenv("KOPT_ROOT"); env && is_root(env)) return fs::path(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path p = exe.parent_path(); !ec && !p.empty() && p != p.root_path(); p = p.parent_path())
    if (is_root(p)) return p;
  for (fs::path p = fs::current_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
    if (is_root(p)) return p;
  throw Error("cannot find kopt's python/kopt folder: run kopt from its repository or set KOPT_ROOT.");
}

}  // namespace kopt
