#include "memory/admission.h"

#include <fmt/format.h>

#include <cmath>

#include "core/hash.h"
#include "memory/trajectory.h"

namespace kopt {

std::string WhyNotAdmitted(const LearnedWin& win) {
  if (!win.verified)
    return "not verified (only candidates that passed the full verifier are learned)";
  if (!win.measured) return "not measured (a win needs a timing)";
  if (!std::isfinite(win.parent_ms) || !std::isfinite(win.child_ms) || win.parent_ms <= 0 ||
      win.child_ms <= 0)
    return fmt::format("no valid timing (parent {} ms, child {} ms)", win.parent_ms, win.child_ms);
  if (NormalizeMove(win.move).empty()) return "no move in words to learn";
  double speedup = win.parent_ms / win.child_ms;
  if (win.child_ms >= win.parent_ms)
    return fmt::format("not faster than its parent ({:.3f}x)", speedup);
  if (win.child_ms > win.parent_ms * kMaxAdmitTimeRatio)
    return fmt::format("within timing noise ({:.3f}x; a win must be at least {:.0f}% faster)",
                       speedup, (1 - kMaxAdmitTimeRatio) * 100);
  return "";
}

std::string LearnedId(const LearnedWin& win) {
  return "learned-" + ContentHash({win.op_class, NormalizeMove(win.move), win.task}).substr(0, 16);
}

KnowledgeEntry LearnedEntry(const LearnedWin& win) {
  KnowledgeEntry e;
  e.id = LearnedId(win);
  e.origin = "learned";
  e.gain = win.parent_ms / win.child_ms;
  std::string move = NormalizeMove(win.move);
  e.title = fmt::format("{} on {} ({:.2f}x)", move, win.task.empty() ? "a task" : win.task, e.gain);
  if (!win.op_class.empty()) e.op_classes = {win.op_class};
  if (!win.bottleneck.empty()) e.bottlenecks = {win.bottleneck};
  if (!win.arch.empty()) e.archs = {win.arch};
  e.technique = win.move;
  e.applies_when = fmt::format("{}{}{}, like {}.",
                               win.op_class.empty() ? "A task" : "A " + win.op_class + " task",
                               win.bottleneck.empty() ? "" : " bound by " + win.bottleneck,
                               win.diagnosis.empty() ? "" : " with the diagnosis " + win.diagnosis,
                               win.task.empty() ? "the one it was measured on" : win.task);
  std::string gpu = win.provenance.is_object() ? win.provenance.value("gpu", std::string()) : "";
  e.expected_effect =
      fmt::format("Measured {:.2f}x over its parent ({:.4g} ms -> {:.4g} ms){}.", e.gain,
                  win.parent_ms, win.child_ms, gpu.empty() ? "" : " on " + gpu);
  e.pitfalls =
      "Learned from one measured, verified win on one task and shape; check that it carries over.";
  e.provenance = win.provenance.is_object() ? win.provenance : Json::object();
  e.provenance["task"] = win.task;
  e.provenance["move"] = win.move;
  e.provenance["proposer"] = win.proposer;
  e.provenance["diagnosis"] = win.diagnosis;
  e.provenance["parent_ms"] = win.parent_ms;
  e.provenance["child_ms"] = win.child_ms;
  return e;
}

}  // namespace kopt
