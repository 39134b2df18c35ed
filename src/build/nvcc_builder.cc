// The nvcc Builder: a content-addressed cache in front of a pool of nvcc runs.
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "build/builder.h"
#include "build/host_emulation.h"
#include "build/ptxas_report.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/subprocess.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

constexpr char kDefaultNvcc[] = "/usr/local/cuda/bin/nvcc";
constexpr char kSourceName[] = "candidate.cu";
constexpr char kObjectName[] = "candidate.so";
constexpr char kRecordName[] = "build.json";

// A fixed set of threads taking jobs from one queue in submission order.
class JobPool {
 public:
  explicit JobPool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~JobPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  JobPool(const JobPool&) = delete;
  JobPool& operator=(const JobPool&) = delete;

  /// Queues `job`; its result (or exception) arrives through the future.
  template <class F>
  std::future<std::invoke_result_t<F>> Submit(F job) {
    auto task = std::make_shared<std::packaged_task<std::invoke_result_t<F>()>>(std::move(job));
    auto future = task->get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back([task] { (*task)(); });
    }
    cv_.notify_one();
    return future;
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything queued is done
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

std::string FindNvcc(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("KOPT_NVCC"); env && *env) return env;
  if (std::string found = FindOnPath("nvcc"); !found.empty()) return found;
  if (::access(kDefaultNvcc, X_OK) == 0) return kDefaultNvcc;
  throw Error(
      "nvcc not found (looked at $KOPT_NVCC, PATH and /usr/local/cuda/bin/nvcc): install the "
      "CUDA toolkit or set KOPT_NVCC to nvcc's path.");
}

// "sm_90" -> "-gencode=arch=compute_90,code=sm_90"; also sm_90a, sm_100f.
std::string GencodeFlag(const std::string& arch) {
  static const std::regex kArch(R"(sm_(\d+[a-z]?))");
  std::smatch m;
  if (!std::regex_match(arch, m, kArch)) {
    throw Error("arch '" + arch + "' is not an SM architecture: use a name like sm_90 or sm_90a.");
  }
  return fmt::format("-gencode=arch=compute_{0},code=sm_{0}", m[1].str());
}

// True when the source includes a cuBLAS / cuBLASLt header (cublas_v2.h,
// cublasLt.h, ...), so the shared object must link those libraries.
bool IncludesCublas(const std::string& source) {
  static const std::regex kInclude(R"(^\s*#\s*include\s*[<"]cublas)");
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    if (std::regex_search(line, kInclude)) return true;
  }
  return false;
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool IsPublished(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kRecordName, ec) && fs::is_regular_file(dir / kObjectName, ec);
}

class NvccBuilder : public Builder {
 public:
  explicit NvccBuilder(const BuilderOptions& options)
      : options_(options), host_(options.arch == kHostArch) {
    if (options_.cache_dir.empty()) {
      throw Error("BuilderOptions::cache_dir is empty: give the builder a cache folder.");
    }
    options_.cache_dir = fs::absolute(options_.cache_dir);
    std::error_code ec;
    fs::create_directories(options_.cache_dir, ec);
    if (ec) {
      throw Error("cannot create the build cache " + options_.cache_dir.string() + ": " +
                  ec.message() + "; check permissions.");
    }
    if (!options_.include_dir.empty()) {
      options_.include_dir = fs::absolute(options_.include_dir);
      fs::path abi = options_.include_dir / "kopt" / "abi.h";
      if (!fs::is_regular_file(abi, ec)) {
        throw Error("include_dir " + options_.include_dir.string() +
                    " holds no kopt/abi.h: pass the repository's include/ folder.");
      }
      abi_header_ = ReadTextFile(abi);
      if (host_) host_header_ = ReadTextFile(options_.include_dir / "kopt" / "host_cuda.h");
    }
    if (host_ && options_.include_dir.empty())
      throw Error("--arch host needs the include folder that holds kopt/host_cuda.h.");
    ProcessOptions version_options;
    version_options.timeout_s = 60;
    if (host_) {  // the CPU emulation: the host's C++ compiler
      const char* cxx = std::getenv("CXX");
      nvcc_ = cxx && *cxx ? cxx : FindOnPath("c++");
      if (nvcc_.empty()) nvcc_ = FindOnPath("g++");
      if (nvcc_.empty())
        throw Error("no C++ compiler found for --arch host: install g++ or set CXX.");
    } else {
      GencodeFlag(options_.arch);  // throws for a bad arch now, not at the first build
      nvcc_ = FindNvcc(options_.nvcc);
    }
    ProcessResult version = RunProcess({nvcc_, "--version"}, version_options);
    if (!version.ok()) {
      throw Error("cannot run '" + nvcc_ + " --version' (" + version.err +
                  (host_ ? "): check the C++ compiler or set CXX."
                         : "): check the CUDA toolkit installation or set KOPT_NVCC."));
    }
    nvcc_version_ = version.out;
    int jobs = options_.jobs > 0
                   ? options_.jobs
                   : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    pool_ = std::make_unique<JobPool>(jobs);
  }

  BuildResult Build(const BuildRequest& request) override {
    return pool_->Submit([this, &request] { return BuildOne(request); }).get();
  }

  std::vector<BuildResult> BuildAll(const std::vector<BuildRequest>& requests) override {
    std::vector<std::future<BuildResult>> futures;
    futures.reserve(requests.size());
    for (const auto& request : requests) {
      futures.push_back(pool_->Submit([this, &request] { return BuildOne(request); }));
    }
    // Wait for every job (they reference `requests`) before rethrowing.
    std::vector<BuildResult> results;
    results.reserve(requests.size());
    std::exception_ptr first_error;
    for (auto& f : futures) {
      try {
        results.push_back(f.get());
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
        results.emplace_back();
      }
    }
    if (first_error) std::rethrow_exception(first_error);
    return results;
  }

 private:
  std::optional<BuildResult> LoadPublished(const fs::path& dir) const {
    if (!IsPublished(dir)) return std::nullopt;
    BuildResult r;
    try {
      r = BuildResultFromJson(ReadJsonFile(dir / kRecordName));
    } catch (const Error&) {
      return std::nullopt;  // unreadable record: compile again and replace it
    }
    if (!r.ok) return std::nullopt;
    r.cache_hit = true;
    r.so_path = dir / kObjectName;
    return r;
  }

  // Moves a finished build folder into place. Another builder may have
  // published the same hash meanwhile; its result is equivalent, so ours is
  // dropped.
  void Publish(const fs::path& tmp, const fs::path& dir) const {
    std::error_code ec, ignored;
    fs::rename(tmp, dir, ec);
    if (!ec) return;
    if (!LoadPublished(dir)) {  // a broken entry (deleted .so, bad record): replace it
      fs::remove_all(dir, ignored);
      fs::rename(tmp, dir, ec);
      if (!ec) return;
    }
    fs::remove_all(tmp, ignored);
    if (!LoadPublished(dir)) {
      throw Error("cannot move a build into " + dir.string() + ": " + ec.message() +
                  "; check permissions and free disk space.");
    }
  }

  BuildResult BuildOne(const BuildRequest& request) {
    std::vector<std::string> flags = NvccFlags(options_, request);
    BuildResult r;
    r.arch = options_.arch;
    std::string source = request.source;
    if (host_) {
      HostSource h = HostEmulationSource(request.source);
      if (!h.ok) {
        r.log = "kopt: this candidate cannot run on the host (--arch host): " + h.why_not + ".\n";
        return r;
      }
      source = std::move(h.source);
    }
    r.hash = ContentHash(
        {source, Join(flags, "\n"), nvcc_version_, abi_header_, host_ ? host_header_ : ""});
    fs::path dir = options_.cache_dir / r.hash;
    if (auto published = LoadPublished(dir)) return *published;

    // Compile in a private folder next to the cache entry, so the rename that
    // publishes it is atomic and nobody ever sees half a result.
    static std::atomic<long> counter{0};
    fs::path tmp =
        options_.cache_dir / fmt::format(".tmp-{}-{}-{}", r.hash, ::getpid(), counter.fetch_add(1));
    std::error_code ec;
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp, ec);
    if (ec) {
      throw Error("cannot create " + tmp.string() + ": " + ec.message() +
                  "; check permissions and free disk space.");
    }
    WriteTextFileAtomic(tmp / kSourceName, source);

    std::vector<std::string> argv = {nvcc_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-o", kObjectName, kSourceName});
    ProcessOptions process_options;
    process_options.cwd = tmp;
    process_options.timeout_s = options_.timeout_s;
    ProcessResult p = RunProcess(argv, process_options);

    r.compile_s = p.wall_s;
    r.log = p.out + p.err;
    if (!r.log.empty() && r.log.back() != '\n') r.log += '\n';
    r.resources = ParsePtxasReport(r.log);
    std::string label = request.name.empty() ? "" : " (" + request.name + ")";
    const char* tool = host_ ? "the C++ compiler" : "nvcc";
    if (p.timed_out) {
      r.log += fmt::format("kopt: {} timed out after {:g} s{} and was killed.\n", tool,
                           options_.timeout_s, label);
    } else if (p.spawn_failed) {
      r.log += "kopt: cannot run " + nvcc_ + label + ": " + p.err + "\n";
    } else if (p.term_signal != 0) {
      r.log += fmt::format("kopt: {}{} was killed by signal {}.\n", tool, label, p.term_signal);
    } else if (p.exit_code != 0) {
      r.log += fmt::format("kopt: {}{} failed with exit status {}.\n", tool, label, p.exit_code);
    } else if (!fs::is_regular_file(tmp / kObjectName, ec)) {
      r.log += fmt::format("kopt: {}{} succeeded but wrote no {}.\n", tool, label, kObjectName);
    } else {
      r.ok = true;
    }
    if (!r.ok) {  // failures are not cached: the next Build compiles again
      fs::remove_all(tmp, ec);
      return r;
    }

    r.so_path = dir / kObjectName;
    Json record = ToJson(r);
    record["name"] = request.name;
    record["command"] = Join(argv, " ");
    record["nvcc_version"] = nvcc_version_;
    WriteJsonFileAtomic(tmp / kRecordName, record);
    Publish(tmp, dir);
    return r;
  }

  BuilderOptions options_;
  std::string nvcc_;
  std::string nvcc_version_;
  bool host_ = false;              // --arch host: g++ against kopt/host_cuda.h
  std::string abi_header_;         // hashed, so an ABI change rebuilds everything
  std::string host_header_;        // hashed too, for host builds
  std::unique_ptr<JobPool> pool_;  // last: its threads stop before the rest goes
};

}  // namespace

std::vector<std::string> NvccFlags(const BuilderOptions& options, const BuildRequest& request) {
  if (options.arch == kHostArch) {
    std::vector<std::string> flags = HostFlags(options.include_dir.string());
    flags.insert(flags.end(), request.extra_flags.begin(), request.extra_flags.end());
    return flags;
  }
  std::vector<std::string> flags = {"-std=c++17", "-O3",   "-lineinfo",
                                    "-Xcompiler", "-fPIC", "-shared",
                                    "-Xptxas",    "-v",    GencodeFlag(options.arch)};
  if (!options.include_dir.empty()) flags.push_back("-I" + options.include_dir.string());
  if (IncludesCublas(request.source)) {
    flags.push_back("-lcublas");
    flags.push_back("-lcublasLt");
  }
  flags.insert(flags.end(), request.extra_flags.begin(), request.extra_flags.end());
  return flags;
}

std::unique_ptr<Builder> MakeNvccBuilder(const BuilderOptions& options) {
  return std::make_unique<NvccBuilder>(options);
}

}  // namespace kopt
