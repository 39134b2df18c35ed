// The real WorkerChannel: one Python worker process, restarted on failure.
#include <unistd.h>
#include <atomic>
#include <future>
#include <mutex>

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/paths.h"
#include "core/subprocess.h"
#include "run/protocol.h"
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
    if (created_sandbox_dir_) {
      std::error_code ec;
      fs::remove_all(options_.sandbox_dir, ec);
    }
  }

  void Prewarm() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!child_.Running() && !start_.valid())
      start_ = std::async(std::launch::async, [this] { return Start(); });
  }

  int starts() const override { return starts_; }

  void Recycle() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (start_.valid()) start_.get();
    child_.Kill();
  }

  WorkerReply Call(const Json& request, double timeout_s) override {
    std::string start_error;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (start_.valid())
        start_error = start_.get();
      else if (!child_.Running())
        start_error = Start();
    }
    if (!start_error.empty()) throw Error(start_error);

    WorkerReply reply;
    auto t0 = std::chrono::steady_clock::now();
    Json req = request;
    req["id"] = ++next_id_;
    if (!child_.WriteLine(req.dump())) {
      reply.status = WorkerReply::Status::kDied;
      reply.message = "the worker's stdin closed (" + child_.ExitDescription() + ")";
      child_.Kill();  // joins the stderr reader, so the tail is complete
      reply.stderr_tail = child_.StderrTail();
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
        child_.Kill();  // joins the stderr reader, so the tail is complete
        reply.stderr_tail = child_.StderrTail();
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
    if (!options_.cache_dir.empty())
      po.env["KOPT_CACHE"] = WorkerCacheDir(options_.cache_dir).string();
    if (!options_.nvcc.empty()) po.env["KOPT_NVCC"] = options_.nvcc;
    if (!options_.arch.empty()) po.env["KOPT_ARCH"] = options_.arch;
    // kopt.load_cuda builds through `kopt build` (one nvcc recipe, in C++);
    // under the sandbox its builds land in KOPT_CACHE/builds, writable there.
    fs::path kopt_binary = options_.kopt_binary.empty() ? KoptBinary() : options_.kopt_binary;
    if (!kopt_binary.empty()) po.env["KOPT_BIN"] = kopt_binary.string();
    po.env["KOPT_ROOT"] = root.string();
    std::vector<std::string> args = {"-m", "kopt.worker", "--device", options_.device};
    if (!options_.sandbox_dir.empty()) {
      std::error_code ec;
      if (!fs::exists(options_.sandbox_dir, ec)) {
        fs::create_directories(options_.sandbox_dir, ec);
        if (!ec) created_sandbox_dir_ = true;
      }
      if (ec)
        return "cannot create the sandbox folder " + options_.sandbox_dir.string() + ": " +
               ec.message();
      args.insert(args.end(), {"--sandbox", fs::absolute(options_.sandbox_dir).string()});
      // On the H200 (2026-12-02) torch.cuda was unavailable when the sandbox
      // was entered before CUDA initialised, and worked when entered after:
      // on CUDA devices the worker opens the device first, unless told.
      const char* order = std::getenv("KOPT_SANDBOX_ORDER");
      if (options_.device.rfind("cuda", 0) == 0 && !(order && *order))
        po.env["KOPT_SANDBOX_ORDER"] = "late";
      // load_inline's builds are kept with kopt's caches (writable in the
      // sandbox) instead of ~/.cache, unless the user chose a folder.
      const char* ext = std::getenv("TORCH_EXTENSIONS_DIR");
      if (!options_.cache_dir.empty() && !(ext && *ext))
        po.env["TORCH_EXTENSIONS_DIR"] = (options_.cache_dir / "torch_extensions").string();
    }
    std::string tried;
    std::string startup_failure;  // a Python with torch that could not open the device
    for (const std::string& python : PythonCandidates()) {
      auto t0 = std::chrono::steady_clock::now();
      std::vector<std::string> argv = {python};
      argv.insert(argv.end(), args.begin(), args.end());
      if (!child_.Start(argv, po)) {
        tried += (tried.empty() ? "" : "; ") + python + ": " + child_.error();
        continue;
      }
      ++starts_;
      auto deadline = t0 + std::chrono::seconds(static_cast<int>(options_.start_timeout_s));
      std::string line;
      bool no_torch = false;
      for (;;) {
        auto st = child_.ReadLine(&line, deadline);
        if (st != LineChild::ReadStatus::kLine) break;
        try {
          Json msg = Json::parse(line);
          if (msg.value("event", "") == "ready") {
            spdlog::debug("worker {} ready in {:.2f} s", python, Since(t0));
            if (!options_.sandbox_dir.empty())
              CheckSandbox(msg.contains("sandbox") ? msg["sandbox"] : Json());
            return "";
          }
          if (msg.value("event", "") == "startup_failed" && msg.contains("error") &&
              msg["error"].is_object()) {
            std::string m = msg["error"].value("message", "");
            if (m.find("No module named 'torch'") != std::string::npos)
              no_torch = true;
            else
              startup_failure = m;
          }
        } catch (const Json::parse_error&) {
        }
      }
      child_.Kill();
      std::string why = LastLines(child_.StderrTail(), 2);
      if (no_torch || why.find("No module named 'torch'") != std::string::npos)
        why = "it cannot import torch";
      std::error_code ec;
      if (why.empty() && python.find('/') != std::string::npos && !fs::exists(python, ec))
        why = "it does not exist";
      if (why.empty())
        why = "it cannot be run or exited at once (" + child_.ExitDescription() + ")";
      tried += (tried.empty() ? "" : "; ") + python + ": " + why;
    }
    if (!startup_failure.empty())
      return "the evaluation worker started but could not open " + options_.device + " (" +
             startup_failure +
             "): check that `python3 -c 'import torch; print(torch.cuda.is_available())'` prints "
             "True.";
    // The advice follows where the interpreter came from.
    const char* env = std::getenv("KOPT_PYTHON");
    std::string advice =
        "install PyTorch for python3, or pass --python (or set KOPT_PYTHON) to a Python with it";
    if (env && *env) advice = "set KOPT_PYTHON (or pass --python) to a Python that has PyTorch";
    if (!options_.python.empty()) advice = "pass --python the path of a Python that has PyTorch";
    return "could not start the evaluation worker (" + tried + "): " + advice + ".";
  }

  void CheckSandbox(const Json& report) {
    std::string shortfall = SandboxShortfall(report);
    if (shortfall.empty() || sandbox_warned_.exchange(true)) return;
    std::string line = "the evaluation worker runs with a weaker sandbox: " + shortfall;
    if (options_.on_warning)
      options_.on_warning(line);
    else
      spdlog::warn("{}", line);
  }

  WorkerOptions options_;
  bool created_sandbox_dir_ = false;
  std::atomic<bool> sandbox_warned_{false};
  LineChild child_;
  std::mutex mu_;
  std::future<std::string> start_;
  std::atomic<int> starts_{0};
  long next_id_ = 0;
};

}  // namespace

std::string SandboxShortfall(const Json& json) {
  if (!json.is_object()) return "the worker reported no sandbox (is python/kopt up to date?)";
  SandboxReport report = ParseSandboxReport(json);
  std::string network = report.network.value_or("not reported");
  std::string filesystem = report.filesystem.value_or("not reported");
  std::vector<std::string> missing;
  if (network != "isolated") missing.push_back("network not isolated (" + network + ")");
  if (filesystem.rfind("landlock", 0) != 0)
    missing.push_back("writes not confined (" + filesystem + ")");
  std::string out;
  for (const auto& m : missing) out += (out.empty() ? "" : "; ") + m;
  return out;
}

std::unique_ptr<WorkerChannel> MakeProcessWorker(const WorkerOptions& options) {
  return std::make_unique<ProcessWorker>(options);
}

fs::path KoptBinary() {
  if (const char* env = std::getenv("KOPT_BIN"); env && *env) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return !ec && exe.filename() == "kopt" ? exe : fs::path();
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
  throw Error(
      "cannot find kopt's python/kopt folder: run kopt from its repository or set KOPT_ROOT.");
}

}  // namespace kopt
