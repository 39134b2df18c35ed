#include "report/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

namespace kopt {
namespace {

std::string Ratio(const std::optional<double>& r) { return r ? fmt::format("{:.2f}x", *r) : std::string("-"); }

}  // namespace

bool IsTerminal(std::FILE* f) {
  const char* term = std::getenv("TERM");
  if (term && std::string(term) == "dumb") return false;
  return ::isatty(::fileno(f)) != 0;
}

ProgressDisplay::ProgressDisplay(std::FILE* out, bool tty) : out_(out), tty_(tty) {}

ProgressDisplay::~ProgressDisplay() { Finish(); }

std::string ProgressDisplay::Line(const TaskProgress& p, int width) {
  int bar_w = std::max(10, std::min(24, width / 6));
  int filled = static_cast<int>(std::clamp(p.budget_fraction, 0.0, 1.0) * bar_w + 0.5);
  std::string bar = std::string(filled, '#') + std::string(bar_w - filled, '.');
  std::string name = p.task;
  if (name.size() > 28) name = name.substr(0, 25) + "...";
  std::string s = fmt::format("[{}/{}] {:<28} [{}] {:<18} {} proposed, {} built, {} measured, {} failed", p.task_index + 1,
                              p.task_count, name, bar, p.stage, p.proposed, p.built, p.measured, p.failed);
  s += fmt::format(" | best {} vs eager, {} vs compile", Ratio(p.best_vs_eager), Ratio(p.best_vs_compile));
  if (width > 0 && static_cast<int>(s.size()) > width) s = s.substr(0, std::max(0, width - 1));
  return s;
}

void ProgressDisplay::Update(const TaskProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(tasks_.begin(), tasks_.end(), [&](const TaskProgress& t) { return t.task_index == p.task_index; });
  bool stage_changed = it == tasks_.end() || it->stage != p.stage;
  if (it == tasks_.end())
    tasks_.push_back(p);
  else
    *it = p;
  if (tty_) {
    Redraw();
    return;
  }
  // Plain lines: a stage change, and every outcome (the message).
  std::string line;
  if (stage_changed) line = fmt::format("kopt: [{}/{}] {}: {}", p.task_index + 1, p.task_count, p.task, p.stage);
  if (!p.message.empty() && p.message.rfind("measuring ", 0) != 0)
    line += (line.empty() ? "" : "\n") +
            fmt::format("kopt: [{}/{}] {} ({} measured, {} failed; best {} vs eager)", p.task_index + 1, p.task_count,
                        p.message, p.measured, p.failed, Ratio(p.best_vs_eager));
  if (!line.empty() && line != last_plain_) {
    fmt::print(out_, "{}\n", line);
    std::fflush(out_);
    last_plain_ = line;
  }
}

void ProgressDisplay::Note(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tty_ && drawn_ > 0) fmt::print(out_, "\x1b[{}F\x1b[J", drawn_);
  fmt::print(out_, "kopt: {}\n", line);
  drawn_ = 0;
  if (tty_) Redraw();
  std::fflush(out_);
}

void ProgressDisplay::Redraw() {
  int width = 120;
  if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) > 40) width = std::atoi(c);
  if (drawn_ > 0) fmt::print(out_, "\x1b[{}F", drawn_);
  std::string text;
  for (const auto& t : tasks_) text += "\x1b[2K" + Line(t, width) + "\n";
  const TaskProgress& last = tasks_.back();
  std::string msg = last.message.size() > static_cast<size_t>(width - 4) ? last.message.substr(0, width - 4)
                                                                         : last.message;
  text += "\x1b[2K  " + msg + "\n";
  fmt::print(out_, "{}", text);
  std::fflush(out_);
  drawn_ = static_cast<int>(tasks_.size()) + 1;
}

void ProgressDisplay::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  drawn_ = 0;
}

}  // namespace kopt
