// Child processes with deadlines and process-group kill (nvcc, the worker).
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kopt {

struct ProcessOptions {
  std::filesystem::path cwd;                  ///< empty: inherit
  std::map<std::string, std::string> env;     ///< added to / overriding ours
  double timeout_s = 0;                       ///< 0: no deadline
  std::string stdin_data;
};

struct ProcessResult {
  int exit_code = -1;      ///< valid when !signaled
  int term_signal = 0;     ///< non-zero when killed by a signal
  bool timed_out = false;  ///< killed (with its process group) at the deadline
  bool spawn_failed = false;
  std::string out;
  std::string err;
  double wall_s = 0;
  bool ok() const { return !timed_out && !spawn_failed && term_signal == 0 && exit_code == 0; }
};

/// Runs argv[0] (searched on PATH) to completion. The child leads its own
/// process group; at the deadline the whole group is killed.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const ProcessOptions& options = {});

/// A long-lived child spoken to in lines over stdin/stdout (the worker).
/// stderr is drained by a thread into a bounded tail kept for diagnostics.
class LineChild {
 public:
  enum class ReadStatus { kLine, kTimeout, kClosed };

  LineChild() = default;
  ~LineChild();
  LineChild(const LineChild&) = delete;
  LineChild& operator=(const LineChild&) = delete;

  /// Starts the child; returns false (with error()) when it cannot be spawned.
  bool Start(const std::vector<std::string>& argv, const ProcessOptions& options);
  bool WriteLine(const std::string& line);
  /// Waits for one line until the deadline.
  ReadStatus ReadLine(std::string* line, std::chrono::steady_clock::time_point deadline);
  /// Kills the whole process group and reaps the child.
  void Kill();
  bool Running();
  /// Exit description after the child ended, e.g. "exit 3" or "signal 9".
  std::string ExitDescription();
  std::string StderrTail() const;
  int pid() const { return pid_; }
  const std::string& error() const { return error_; }

 private:
  void Reap(bool block);

  int pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool reaped_ = false;
  int wait_status_ = 0;
  std::string buffer_;
  std::string error_;
  std::thread err_thread_;
  mutable std::mutex err_mu_;
  std::string err_tail_;
};

/// Searches PATH for an executable; empty when not found.
std::string FindOnPath(const std::string& name);

}  // namespace kopt
