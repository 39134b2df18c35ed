// What the user hands kopt: a task (workload) and candidates for it.
#pragma once

#include <filesystem>
#include <string>

namespace kopt {

enum class TaskFormat { kKernelBench, kNativeCuda };

struct Task {
  std::filesystem::path path;  ///< absolute path of the task file
  std::string name;            ///< file stem, e.g. "03_softmax"
  TaskFormat format = TaskFormat::kKernelBench;
};

enum class CandidateKind {
  kCuda,    ///< one .cu through the C ABI (include/kopt/abi.h)
  kHybrid,  ///< a KernelBench-style ModelNew Python file
};

struct Candidate {
  CandidateKind kind = CandidateKind::kCuda;
  std::filesystem::path path;  ///< source file
  std::string source;          ///< its text
  std::string name;            ///< for reports (file name)
};

const char* CandidateKindName(CandidateKind kind);

}  // namespace kopt
