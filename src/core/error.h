// Infrastructure failures that reach the user as one clear sentence.
#pragma once

#include <stdexcept>
#include <string>

namespace kopt {

/// Thrown only when the infrastructure fails (missing file, no GPU, disk
/// full); candidate failures are Outcome values, never exceptions. The
/// message is one sentence that says what to do.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kopt
