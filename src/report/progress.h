// Live progress of `kopt optimize`: on a terminal, one bar per task redrawn
// in place (candidates by stage, the best speedups so far, the budget left);
// otherwise plain lines, one per event worth a line, so logs stay readable.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "loop/tuner.h"

namespace kopt {

class ProgressDisplay {
 public:
  /// `tty`: redraw in place (ANSI), else plain lines. `out` is usually stderr.
  ProgressDisplay(std::FILE* out, bool tty);
  ~ProgressDisplay();

  void Update(const TaskProgress& p);
  /// A line of its own above the bars (proposer notes, warnings).
  void Note(const std::string& line);
  /// Leaves the bars as they are and moves below them.
  void Finish();

  /// The bar of one task as text (for tests): name, a bar of the budget
  /// share spent, counts, best speedups.
  static std::string Line(const TaskProgress& p, int width);

 private:
  void Redraw();

  std::FILE* out_;
  bool tty_;
  std::mutex mu_;
  std::vector<TaskProgress> tasks_;
  int drawn_ = 0;  ///< lines drawn last time (to move the cursor back up)
  std::string last_plain_;
};

/// True when `f` is a terminal (and TERM is not "dumb").
bool IsTerminal(std::FILE* f);

}  // namespace kopt
