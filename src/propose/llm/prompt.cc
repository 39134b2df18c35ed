#include "propose/llm/prompt.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

std::string LangOf(const Candidate& c) {
  return c.kind == CandidateKind::kCuda ? "cuda" : "python";
}

std::string Ms(double ms) { return fmt::format("{:.4g} ms", ms); }

std::string Bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.3g} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.3g} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.3g} KB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string Shape(const std::vector<long long>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

}  // namespace

PromptTemplates LoadPromptTemplates(const fs::path& dir) {
  auto read = [&](const char* name) {
    fs::path p = dir / name;
    if (!fs::exists(p))
      throw Error(
          fmt::format("the LLM prompt template {} is missing: the prompt folder must hold "
                      "system.md, propose.md, repair.md and formats.md.",
                      p.string()));
    return ReadTextFile(p);
  };
  PromptTemplates t;
  t.system = read("system.md");
  t.propose = read("propose.md");
  t.repair = read("repair.md");
  t.formats = read("formats.md");
  return t;
}

std::string CapText(const std::string& text, std::size_t cap) {
  if (text.size() <= cap) return text;
  std::string note = fmt::format("\n[... {} more chars cut]", text.size());
  if (cap <= note.size()) return text.substr(0, cap);
  std::size_t keep = cap - note.size();
  std::size_t nl = text.rfind('\n', keep);
  if (nl != std::string::npos && nl > keep / 2) keep = nl;  // cut at a line end when near
  return text.substr(0, keep) + fmt::format("\n[... {} more chars cut]", text.size() - keep);
}

RenderedPrompt RenderPrompt(const std::string& tmpl, std::vector<PromptSection> sections,
                            std::size_t budget_chars) {
  RenderedPrompt out;
  // The template's slots, in order, and its fixed text's size.
  std::vector<std::string> slots;
  std::size_t fixed = 0;
  for (std::size_t pos = 0;;) {
    std::size_t open = tmpl.find("{{", pos);
    std::size_t close = open == std::string::npos ? open : tmpl.find("}}", open + 2);
    if (close == std::string::npos) {
      fixed += tmpl.size() - pos;
      break;
    }
    fixed += open - pos;
    slots.push_back(tmpl.substr(open + 2, close - open - 2));
    pos = close + 2;
  }
  std::map<std::string, std::size_t> uses;
  for (const auto& s : slots) ++uses[s];
  std::vector<bool> cut(sections.size(), false);
  auto total = [&] {
    std::size_t n = fixed;
    for (const auto& s : sections) n += s.text.size() * (uses.count(s.name) ? uses[s.name] : 0);
    return n;
  };
  for (std::size_t i = 0; i < sections.size(); ++i) {
    std::string c = CapText(sections[i].text, sections[i].cap);
    cut[i] = c.size() != sections[i].text.size();
    sections[i].text = std::move(c);
  }
  // Over budget: cut the sections that matter least first, each down to a
  // floor of a few lines, until the prompt fits.
  std::vector<std::size_t> order(sections.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return sections[a].keep < sections[b].keep;
  });
  constexpr std::size_t kFloor = 300;
  for (std::size_t i : order) {
    std::size_t n = total();
    if (n <= budget_chars) break;
    std::string& t = sections[i].text;
    if (t.size() <= kFloor || !uses.count(sections[i].name)) continue;
    std::size_t excess = (n - budget_chars + uses[sections[i].name] - 1) / uses[sections[i].name];
    std::size_t target = t.size() > excess + kFloor ? t.size() - excess : kFloor;
    t = CapText(t, target);
    cut[i] = true;
  }
  std::map<std::string, const std::string*> values;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    values[sections[i].name] = &sections[i].text;
    out.sections[sections[i].name] = {{"chars", sections[i].text.size()}, {"cut", cut[i]}};
  }
  std::string text;
  text.reserve(total());
  for (std::size_t pos = 0;;) {
    std::size_t open = tmpl.find("{{", pos);
    std::size_t close = open == std::string::npos ? open : tmpl.find("}}", open + 2);
    if (close == std::string::npos) {
      text += tmpl.substr(pos);
      break;
    }
    text += tmpl.substr(pos, open - pos);
    std::string name = tmpl.substr(open + 2, close - open - 2);
    auto v = values.find(name);
    if (v != values.end()) {
      text += *v->second;
    } else if (std::find(out.unfilled.begin(), out.unfilled.end(), name) == out.unfilled.end()) {
      out.unfilled.push_back(name);
    }
    pos = close + 2;
  }
  out.text = std::move(text);
  return out;
}

std::string ContractText(const Contract& c) {
  std::string s = DescribeContract(c) + ".";
  s += c.libraries.empty() ? "\nLibraries: none besides the CUDA runtime."
                           : fmt::format("\nLibraries allowed: {}.", fmt::join(c.libraries, ", "));
  if (c.pre_transform_weights)
    s += *c.pre_transform_weights
             ? "\nParameters may be transformed once (kopt_init) and reused on every call."
             : "\nParameters may not be pre-transformed: the forward writes them.";
  if (!c.training.empty()) s += "\nTraining semantics: " + c.training;
  for (const auto& i : c.inferred) s += "\n- inferred: " + i;
  return s;
}

std::string DeviceText(const TaskBundle* b, const std::string& arch) {
  std::vector<std::string> lines;
  if (!arch.empty()) lines.push_back("Target: " + arch);
  if (!b) return lines.empty() ? "(unknown)" : lines[0];
  const DeviceInfo& d = b->device;
  if (!d.name.empty()) {
    std::string l = "GPU: " + d.name;
    if (d.cc_major > 0) l += fmt::format(", compute capability {}.{}", d.cc_major, d.cc_minor);
    if (d.sm_count > 0) l += fmt::format(", {} SMs", d.sm_count);
    if (d.l2_bytes > 0) l += ", L2 " + Bytes(static_cast<double>(d.l2_bytes));
    if (d.memory_bytes > 0) l += ", memory " + Bytes(static_cast<double>(d.memory_bytes));
    if (d.max_sm_clock_mhz > 0) l += fmt::format(", max SM clock {:.0f} MHz", d.max_sm_clock_mhz);
    if (!d.torch_version.empty()) l += ", torch " + d.torch_version;
    lines.push_back(l);
  }
  for (const auto& t : b->inputs)
    lines.push_back(fmt::format("Input {} ({}): {} {}", t.name, t.role, t.dtype, Shape(t.shape)));
  for (const auto& t : b->outputs)
    lines.push_back(fmt::format("Output {}: {} {}", t.name, t.dtype, Shape(t.shape)));
  if (b->flops > 0 || b->min_bytes > 0)
    lines.push_back(fmt::format("Work: {:.4g} FLOP ({:.4g} in matrix ops), at least {} moved",
                                b->flops, b->matrix_flops, Bytes(b->min_bytes)));
  if (b->floor_ms > 0)
    lines.push_back(fmt::format("Roofline floor: {} ({}-bound)", Ms(b->floor_ms),
                                b->floor_bound.empty() ? "?" : b->floor_bound));
  if (b->eager_ms) lines.push_back("Eager PyTorch: " + Ms(b->eager_ms->median));
  if (b->compile_ms) lines.push_back("torch.compile: " + Ms(b->compile_ms->median));
  for (const auto& k : b->kernels)
    lines.push_back(fmt::format("Reference kernel {}: {:.3g} calls, {} per forward", k.name,
                                k.calls, Ms(k.device_ms)));
  return fmt::format("{}", fmt::join(lines, "\n"));
}

std::string PlanText(const std::vector<PlanOption>& plan, const TaskBundle* b) {
  if (plan.empty()) return "(no option: kopt's planner found nothing to offer for this task)";
  std::string s;
  double eager = b && b->eager_ms ? b->eager_ms->median : 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const PlanOption& o = plan[i];
    s += fmt::format("{}. {} [{}]: {}", i + 1, o.label, o.space, o.about);
    if (o.est_ms > 0) {
      s += fmt::format(" (estimate {}", Ms(o.est_ms));
      if (eager > 0) s += fmt::format(", {:.2f}x eager", eager / o.est_ms);
      s += ")";
    }
    s += "\n";
  }
  return s;
}

std::string DiagnosesText(const std::vector<Diagnosis>& in) {
  if (in.empty()) return "(not profiled: no findings)";
  std::vector<Diagnosis> ds = in;
  SortByCallGain(&ds);
  std::string s;
  for (const Diagnosis& d : ds) {
    s += fmt::format("- {} ({}; up to {:.0f}% of the call's time", d.tool,
                     d.severity.empty() ? "info" : d.severity, 100 * d.CallGain());
    if (!d.kernel.empty() && d.kernel != "(call)") s += ", kernel " + d.kernel;
    s += "): " + d.advice + "\n";
    if (!d.evidence.empty()) {
      std::vector<std::string> ev;
      for (const auto& [k, v] : d.evidence) ev.push_back(fmt::format("{} = {:.4g}", k, v));
      s += fmt::format("  Evidence: {}\n", fmt::join(ev, "; "));
    }
    if (!d.suggested_moves.empty())
      s += fmt::format("  Suggested moves: {}\n", fmt::join(d.suggested_moves, ", "));
  }
  return s;
}

std::string MemoryText(const std::vector<KnowledgeEntry>& entries) {
  if (entries.empty()) return "(no entry matched)";
  std::string s;
  for (const KnowledgeEntry& e : entries) {
    s += fmt::format("- [{}] {}", e.id, e.title);
    if (e.origin == "learned" && e.gain > 0)
      s += fmt::format(" (learned: {:.2f}x measured)", e.gain);
    s += "\n";
    if (!e.technique.empty()) s += "  Technique: " + e.technique + "\n";
    if (!e.applies_when.empty()) s += "  Applies when: " + e.applies_when + "\n";
    if (!e.expected_effect.empty()) s += "  Expected effect: " + e.expected_effect + "\n";
    if (!e.pitfalls.empty()) s += "  Pitfalls: " + e.pitfalls + "\n";
  }
  return s;
}

std::string OutcomeText(const Outcome& o, const TaskBundle* b) {
  if (const auto* m = std::get_if<Measured>(&o)) {
    std::string s = fmt::format("verified; {} median", Ms(m->time_ms.median));
    std::optional<double> x = b ? SpeedupVsEager(*m, *b) : m->SpeedupVsEager();
    if (x) s += fmt::format(", {:.2f}x eager PyTorch", *x);
    if (b && b->floor_ms > 0)
      s += fmt::format(", {:.0f}% of the roofline floor", 100 * b->floor_ms / m->time_ms.median);
    return s;
  }
  return OutcomeLine(o);
}

std::string FailureText(const Outcome& o) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, BuildFailed>) {
          return "The build failed. First error: " + BuildFailureReason(v.log) + "\n\n" + v.log;
        } else if constexpr (std::is_same_v<T, Incorrect>) {
          std::string s = "It built and ran, but the verifier rejected it:";
          for (const auto& r : v.reasons) s += "\n- " + r;
          return s;
        } else if constexpr (std::is_same_v<T, Crashed>) {
          return fmt::format("It crashed ({}): {}", v.kind, v.message);
        } else if constexpr (std::is_same_v<T, TimedOut>) {
          return fmt::format("It did not finish {} within {:.0f} s.", v.phase, v.after_s);
        } else {
          return "It verified.";
        }
      },
      o);
}

namespace {

std::vector<PromptSection> CommonSections(const PromptTemplates& t, const PromptInputs& in,
                                          const PromptLimits& l) {
  std::vector<PromptSection> s;
  s.push_back({"task_name", in.task.name, 200, 9});
  s.push_back({"task_source", in.task_source, l.task, 7});
  s.push_back({"contract", ContractText(in.contract), l.contract, 8});
  s.push_back({"device", DeviceText(in.bundle, in.arch), l.device, 3});
  s.push_back({"plan", PlanText(in.plan, in.bundle), l.plan, 2});
  s.push_back(
      {"trajectory", in.trajectory.empty() ? "(nothing yet)" : in.trajectory, l.trajectory, 4});
  s.push_back({"formats", t.formats, l.formats, 6});
  return s;
}

}  // namespace

RenderedPrompt RenderProposePrompt(const PromptTemplates& t, const PromptInputs& in,
                                   const PromptLimits& l) {
  std::vector<PromptSection> s = CommonSections(t, in, l);
  if (in.parent && !in.parent->source.empty()) {
    s.push_back(
        {"parent",
         fmt::format("{} ({}):\n```{}\n{}\n```", in.parent->name,
                     CandidateKindName(in.parent->kind), LangOf(*in.parent), in.parent->source),
         l.parent, 8});
  } else {
    s.push_back({"parent", "(the reference Model above: nothing has been written yet)", 200, 8});
  }
  s.push_back({"parent_outcome",
               in.parent_outcome ? OutcomeText(*in.parent_outcome, in.bundle) : "(the reference)",
               500, 8});
  s.push_back({"diagnoses", DiagnosesText(in.diagnoses), l.diagnoses, 6});
  s.push_back({"memory", MemoryText(in.memory), l.memory, 5});
  s.push_back(
      {"tried_moves",
       in.tried_moves.empty() ? "(none)" : fmt::format("{}", fmt::join(in.tried_moves, "; ")), 1500,
       5});
  return RenderPrompt(t.propose, std::move(s), l.budget_chars);
}

RenderedPrompt RenderRepairPrompt(const PromptTemplates& t, const PromptInputs& in,
                                  const PromptLimits& l) {
  std::vector<PromptSection> s = CommonSections(t, in, l);
  const Candidate parent = in.parent.value_or(Candidate{});
  s.push_back({"parent_lang", LangOf(parent), 20, 9});
  s.push_back({"parent_source", parent.source, l.parent, 8});
  s.push_back(
      {"failure_kind", in.parent_outcome ? OutcomeName(*in.parent_outcome) : "unknown", 40, 9});
  s.push_back({"errors", in.parent_outcome ? FailureText(*in.parent_outcome) : "(no message)",
               l.errors, 8});
  s.push_back({"repair_round", std::to_string(in.repair_round), 10, 9});
  s.push_back({"repair_cap", std::to_string(in.repair_cap), 10, 9});
  return RenderPrompt(t.repair, std::move(s), l.budget_chars);
}

}  // namespace kopt
