#include "core/subprocess.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace kopt {
namespace {

constexpr size_t kStderrTailBytes = 64 * 1024;

struct Argv {
  std::vector<std::string> storage;
  std::vector<char*> ptrs;
  explicit Argv(const std::vector<std::string>& v) : storage(v) {
    for (auto& s : storage) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
};

// The environment for the child, built before fork (nothing after fork may
// allocate).
std::vector<std::string> MergedEnv(const std::map<std::string, std::string>& add) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (auto& [k, v] : add) env[k] = v;
  std::vector<std::string> out;
  for (auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::string ResolveExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string found = FindOnPath(name);
  return found.empty() ? name : found;
}

// Forks a child in its own process group with the given pipes as 0/1/2.
// Returns the pid, or -1.
int SpawnChild(const std::vector<std::string>& argv, const ProcessOptions& options,
               int stdin_fd, int stdout_fd, int stderr_fd) {
  Argv args(argv);
  std::string exe = ResolveExecutable(argv.at(0));
  Argv envs(MergedEnv(options.env));
  std::string cwd = options.cwd.string();
  int pid = ::fork();
  if (pid != 0) return pid;
  // Child: only async-signal-safe calls from here on.
  ::setpgid(0, 0);
  // dup2 clears O_CLOEXEC on the copies; the originals close at exec.
  ::dup2(stdin_fd, 0);
  ::dup2(stdout_fd, 1);
  ::dup2(stderr_fd, 2);
  if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
  ::execve(exe.c_str(), args.ptrs.data(), envs.ptrs.data());
  ::_exit(127);
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string p(path);
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (!dir.empty()) {
      std::string cand = dir + "/" + name;
      if (::access(cand.c_str(), X_OK) == 0) return cand;
    }
    start = end + 1;
  }
  return "";
}

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const ProcessOptions& options) {
  ProcessResult result;
  auto t0 = std::chrono::steady_clock::now();
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) || ::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC)) {
    result.spawn_failed = true;
    result.err = std::string("pipe failed: ") + std::strerror(errno);
    return result;
  }
  int pid = SpawnChild(argv, options, in_pipe[0], out_pipe[1], err_pipe[1]);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    result.spawn_failed = true;
    result.err = std::string("fork failed: ") + std::strerror(errno);
    ::close(in_pipe[1]); ::close(out_pipe[0]); ::close(err_pipe[0]);
    return result;
  }
  ::setpgid(pid, pid);  // also from the parent, to close the race

  // Feed stdin (small inputs only; larger ones would need polling too).
  if (!options.stdin_data.empty()) {
    ::signal(SIGPIPE, SIG_IGN);
    size_t off = 0;
    while (off < options.stdin_data.size()) {
      ssize_t n = ::write(in_pipe[1], options.stdin_data.data() + off, options.stdin_data.size() - off);
      if (n <= 0) break;
      off += n;
    }
  }
  ::close(in_pipe[1]);

  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  bool open[2] = {true, true};
  std::string* sinks[2] = {&result.out, &result.err};
  char buf[65536];
  while (open[0] || open[1]) {
    int wait_ms = -1;
    if (options.timeout_s > 0) {
      double left = options.timeout_s - SecondsSince(t0);
      if (left <= 0) {
        result.timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    for (int i = 0; i < 2; ++i) fds[i].fd = open[i] ? (i ? err_pipe[0] : out_pipe[0]) : -1;
    int r = ::poll(fds, 2, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (!open[i] || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) sinks[i]->append(buf, n);
      else open[i] = false;
    }
  }
  if (result.timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  if (result.exit_code == 127 && result.out.empty() && result.err.empty()) {
    result.spawn_failed = true;
    result.err = "cannot execute " + argv.at(0);
  }
  result.wall_s = SecondsSince(t0);
  return result;
}

LineChild::~LineChild() { Kill(); }

bool LineChild::Start(const std::vector<std::string>& argv, const ProcessOptions& options) {
  Kill();
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) || ::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC)) {
    error_ = std::string("pipe failed: ") + std::strerror(errno);
    return false;
  }
  ::signal(SIGPIPE, SIG_IGN);
  pid_ = SpawnChild(argv, options, in_pipe[0], out_pipe[1], err_pipe[1]);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid_ < 0) {
    error_ = std::string("fork failed: ") + std::strerror(errno);
    ::close(in_pipe[1]); ::close(out_pipe[0]); ::close(err_pipe[0]);
    return false;
  }
  ::setpgid(pid_, pid_);
  in_fd_ = in_pipe[1];
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
  reaped_ = false;
  buffer_.clear();
  {
    std::lock_guard<std::mutex> lock(err_mu_);
    err_tail_.clear();
  }
  int err_fd = err_fd_;
  err_thread_ = std::thread([this, err_fd] {
    char buf[8192];
    for (;;) {
      ssize_t n = ::read(err_fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::lock_guard<std::mutex> lock(err_mu_);
      err_tail_.append(buf, n);
      if (err_tail_.size() > 2 * kStderrTailBytes)
        err_tail_.erase(0, err_tail_.size() - kStderrTailBytes);
    }
  });
  return true;
}

bool LineChild::WriteLine(const std::string& line) {
  if (in_fd_ < 0) return false;
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(in_fd_, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += n;
  }
  return true;
}

LineChild::ReadStatus LineChild::ReadLine(std::string* line,
                                          std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      *line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return ReadStatus::kLine;
    }
    if (out_fd_ < 0) return ReadStatus::kClosed;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return ReadStatus::kTimeout;
    pollfd pfd{out_fd_, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return ReadStatus::kTimeout;
    char buf[65536];
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(out_fd_);
      out_fd_ = -1;
      return ReadStatus::kClosed;
    }
    buffer_.append(buf, n);
  }
}

void LineChild::Reap(bool block) {
  if (pid_ < 0 || reaped_) return;
  int status = 0;
  int r;
  while ((r = ::waitpid(pid_, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {}
  if (r == pid_) {
    reaped_ = true;
    wait_status_ = status;
  }
}

bool LineChild::Running() {
  if (pid_ < 0) return false;
  Reap(false);
  return !reaped_;
}

void LineChild::Kill() {
  if (pid_ < 0) return;
  if (!reaped_) ::kill(-pid_, SIGKILL);
  Reap(true);
  pid_ = -1;
  for (int* fd : {&in_fd_, &out_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  if (err_thread_.joinable()) err_thread_.join();
  if (err_fd_ >= 0) ::close(err_fd_);
  err_fd_ = -1;
}

std::string LineChild::ExitDescription() {
  if (pid_ >= 0) Reap(false);
  if (!reaped_) return "running";
  if (WIFEXITED(wait_status_)) return "exit " + std::to_string(WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) return std::string("signal ") + std::to_string(WTERMSIG(wait_status_));
  return "ended";
}

std::string LineChild::StderrTail() const {
  std::lock_guard<std::mutex> lock(err_mu_);
  if (err_tail_.size() <= kStderrTailBytes) return err_tail_;
  return err_tail_.substr(err_tail_.size() - kStderrTailBytes);
}

}  // namespace kopt
