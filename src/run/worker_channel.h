// The seam to the evaluation worker: JSON requests in, raw facts out.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"

namespace kopt {

struct WorkerReply {
  enum class Status {
    kOk,       ///< the op succeeded; `body` holds its fields
    kError,    ///< the worker answered with an error (`error_kind`, `message`)
    kTimeout,  ///< no answer before the deadline; the worker was killed
    kDied,     ///< the worker exited without answering
  };
  Status status = Status::kDied;
  Json body;
  std::string error_kind;  ///< worker error kind, e.g. cuda_error, oom
  std::string message;
  bool fatal = false;      ///< the worker exits after this reply
  double wall_s = 0;
  std::string stderr_tail;  ///< worker stderr, for died/timeout diagnostics
  bool ok() const { return status == Status::kOk; }
};

/// Sends one request and waits for its reply. Implementations restart the
/// worker after it dies, hangs or reports a fatal error.
class WorkerChannel {
 public:
  virtual ~WorkerChannel() = default;
  virtual WorkerReply Call(const Json& request, double timeout_s) = 0;
  /// Starts the worker in the background, if it is not running, so that
  /// compiling and starting overlap. Calling it is optional.
  virtual void Prewarm() {}
  /// How many times the worker process has been (re)started.
  virtual int starts() const { return 0; }
  /// Ends the worker process; the next Call starts a fresh one (after a
  /// candidate changed the process: patched torch, hooked the reference).
  virtual void Recycle() {}
};

struct WorkerOptions {
  std::filesystem::path repo_root;  ///< holds python/kopt and include/kopt
  std::string device = "cuda:0";    ///< or "cpu" (tests without a GPU)
  std::string python;               ///< empty: KOPT_PYTHON, python3, /usr/bin/python3
  double start_timeout_s = 180;     ///< importing torch can be slow
  std::filesystem::path cache_dir;  ///< KOPT_CACHE for kopt.load_cuda
  std::string nvcc;                 ///< KOPT_NVCC for kopt.load_cuda
  std::string arch;                 ///< KOPT_ARCH
  /// KOPT_BIN: the kopt executable kopt.load_cuda asks to build (`kopt
  /// build`); empty: KoptBinary().
  std::filesystem::path kopt_binary;
  /// Scratch folder of the OS sandbox (`--sandbox`, docs/verification.md):
  /// the worker and candidates get no network and may write only here (and
  /// in the caches). Empty: no sandbox. Created when missing, and then
  /// removed again when the worker channel is destroyed.
  std::filesystem::path sandbox_dir;
  /// Called once when the worker reports a sandbox it could not fully apply
  /// (one sentence); unset: logged as a warning.
  std::function<void(const std::string&)> on_warning;
};

/// One sentence saying what is missing from a worker's sandbox report (the
/// `sandbox` field of its `ready` event or `hello` reply), or "" when the
/// network is isolated and the filesystem confined.
std::string SandboxShortfall(const Json& report);

/// The real worker: `python3 -m kopt.worker` in its own process group.
std::unique_ptr<WorkerChannel> MakeProcessWorker(const WorkerOptions& options);

/// The kopt executable workers hand to kopt.load_cuda: $KOPT_BIN, else this
/// process when it is kopt; empty otherwise (load_cuda then says how to set it).
std::filesystem::path KoptBinary();

/// Finds the repository root (the folder holding python/kopt/worker.py) from
/// KOPT_ROOT, the executable's location or the current directory.
std::filesystem::path FindRepoRoot();

}  // namespace kopt
