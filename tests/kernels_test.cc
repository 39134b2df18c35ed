// The template library kernels/: every kernels/*/template.json names files
// that exist, whose slot lines (`#define KOPT_<NAME> <int>  // slot: ...`)
// match the JSON's defaults and whose knob lines parse with about texts; and
// each template compiles with real nvcc for sm_90a at its defaults, at every
// listed value of each slot (the others at their defaults) and at the two
// knob configurations farthest from the defaults.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <regex>
#include <sstream>

#include "build/builder.h"
#include "core/json.h"
#include "propose/knobs.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

/// One `#define KOPT_<NAME> <value>  // slot: <about>` line of a template.
struct SlotLine {
  std::string name;  ///< KOPT_REVERSE
  long long value = 0;
  int line = 0;                              ///< 1-based
  std::size_t value_pos = 0, value_len = 0;  ///< the value's bytes in the source
};

/// The slot lines of a template source, in order. Kept here until the planner
/// library owns the real parser.
std::vector<SlotLine> ParseSlotLines(const std::string& source) {
  static const std::regex kSlot(
      R"(^[ \t]*#define[ \t]+(KOPT_[A-Z0-9_]+)[ \t]+(-?[0-9]+)[ \t]*//[ \t]*slot:)");
  std::vector<SlotLine> out;
  std::size_t pos = 0;
  int line = 0;
  while (pos <= source.size()) {
    ++line;
    std::size_t end = source.find('\n', pos);
    if (end == std::string::npos) end = source.size();
    const std::string text = source.substr(pos, end - pos);
    std::smatch m;
    if (std::regex_search(text, m, kSlot)) {
      SlotLine s;
      s.name = m[1];
      s.value = std::stoll(m[2]);
      s.line = line;
      s.value_pos = pos + m.position(2);
      s.value_len = m.length(2);
      out.push_back(s);
    }
    if (end == source.size()) break;
    pos = end + 1;
  }
  return out;
}

/// `source` with slot `name`'s value replaced by `value` (only that token).
std::string SetSlot(const std::string& source, const std::string& name, long long value) {
  for (const SlotLine& s : ParseSlotLines(source)) {
    if (s.name != name) continue;
    std::string out = source;
    out.replace(s.value_pos, s.value_len, std::to_string(value));
    return out;
  }
  throw std::runtime_error("no slot line " + name);
}

struct Template {
  std::string name;  ///< scan/scan_lastdim.cu
  fs::path path;
  Json spec;  ///< its entry in template.json
};

std::vector<fs::path> TemplateJsons() {
  std::vector<fs::path> out;
  const fs::path dir = testing::SourceDir() / "kernels";
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const fs::path j = e.path() / "template.json";
    if (e.is_directory() && fs::is_regular_file(j)) out.push_back(j);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Template> Templates() {
  std::vector<Template> out;
  for (const fs::path& j : TemplateJsons()) {
    const Json doc = ReadJsonFile(j);
    for (const Json& t : doc.at("templates")) {
      const std::string file = t.at("file").get<std::string>();
      out.push_back({j.parent_path().filename().string() + "/" + file, j.parent_path() / file, t});
    }
  }
  return out;
}

double Distance(const KnobSpace& space, const KnobConfig& a, const KnobConfig& b) {
  double d = 0;
  for (const Knob& k : space.knobs()) {
    if (k.values.size() < 2) continue;
    auto at = [&](long long v) {
      return std::find(k.values.begin(), k.values.end(), v) - k.values.begin();
    };
    d += std::abs(static_cast<double>(at(a.at(k.name)) - at(b.at(k.name)))) / (k.values.size() - 1);
  }
  return d;
}

/// `extra` valid configurations, each the farthest from the defaults and
/// those already chosen (as src/propose/solutions_test.cc).
std::vector<KnobConfig> FarFromDefaults(const KnobSpace& space, int extra) {
  std::vector<KnobConfig> chosen{space.Defaults()};
  const auto all = space.Enumerate(space.Size());
  for (int i = 0; i < extra; ++i) {
    const KnobConfig* best = nullptr;
    double best_d = 0;
    for (const KnobConfig& c : all) {
      double d = 1e300;
      for (const KnobConfig& x : chosen) d = std::min(d, Distance(space, c, x));
      if (d > best_d) {
        best_d = d;
        best = &c;
      }
    }
    if (!best) break;
    chosen.push_back(*best);
  }
  chosen.erase(chosen.begin());
  return chosen;
}

TEST(KernelTemplates, SlotLineParser) {
  const std::string src =
      "#define KOPT_A 3  // slot: a\n"
      "  #define KOPT_DIM -1 // slot: dim\n"
      "#define KOPT_B 4  // not a slot\n"
      "#define OTHER 5  // slot: not KOPT_\n";
  const auto slots = ParseSlotLines(src);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0].name, "KOPT_A");
  EXPECT_EQ(slots[0].value, 3);
  EXPECT_EQ(slots[1].name, "KOPT_DIM");
  EXPECT_EQ(slots[1].value, -1);
  EXPECT_EQ(slots[1].line, 2);
  const std::string set = SetSlot(src, "KOPT_DIM", 2);
  EXPECT_EQ(set.substr(0, set.find("KOPT_B")),
            "#define KOPT_A 3  // slot: a\n  #define KOPT_DIM 2 // slot: dim\n#define ");
}

TEST(KernelTemplates, EveryTemplateHasItsFileSlotsAndKnobs) {
  const auto templates = Templates();
  ASSERT_GE(templates.size(), 3u) << "scan, reduce and pool at least";
  for (const Template& t : templates) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(fs::is_regular_file(t.path)) << t.path;
    const std::string source = ReadTextFile(t.path);
    EXPECT_NE(source.find("kopt_forward"), std::string::npos);
    EXPECT_TRUE(t.spec.contains("class") && t.spec.at("class").is_string());
    EXPECT_TRUE(t.spec.contains("ops") && t.spec.at("ops").is_array());
    const auto lines = ParseSlotLines(source);
    const Json slots = t.spec.value("slots", Json::object());
    for (const auto& [name, slot] : slots.items()) {
      int count = 0;
      for (const SlotLine& s : lines) {
        if (s.name != name) continue;
        ++count;
        EXPECT_EQ(s.value, slot.at("default").get<long long>()) << name << " line " << s.line;
      }
      EXPECT_EQ(count, 1) << name << ": exactly one `#define " << name << " <int>  // slot:` line";
      EXPECT_TRUE(slot.contains("about") && !slot.at("about").get<std::string>().empty()) << name;
      EXPECT_TRUE(slot.contains("values") && slot.at("values").is_array()) << name;
    }
    for (const SlotLine& s : lines)
      EXPECT_TRUE(slots.contains(s.name))
          << s.name << " (line " << s.line << ") is not in template.json";
    const KnobSpace space = KnobSpace::Parse(source, t.name);  // throws on a malformed line
    EXPECT_EQ(space.Apply(space.Defaults()), source);
    for (const Knob& k : space.knobs()) EXPECT_FALSE(k.about.empty()) << k.name;
  }
}

TEST(KernelTemplates, CompileAtDefaultsSlotValuesAndFarApartKnobs) {
  if (!testing::HaveNvcc()) GTEST_SKIP() << "nvcc not found";
  BuilderOptions options;
  options.cache_dir = testing::ScratchDir("kernels-nvcc");
  options.include_dir = testing::SourceDir() / "include";
  options.arch = "sm_90a";
  options.jobs = 2;
  auto builder = MakeNvccBuilder(options);

  std::vector<BuildRequest> requests;
  for (const Template& t : Templates()) {
    const std::string source = ReadTextFile(t.path);
    requests.push_back({source, t.name + "[defaults]", {}});
    const Json slots = t.spec.value("slots", Json::object());
    for (const auto& [name, slot] : slots.items()) {
      const long long def = slot.at("default").get<long long>();
      for (const Json& v : slot.at("values")) {
        const long long value = v.get<long long>();
        if (value == def) continue;
        requests.push_back({SetSlot(source, name, value),
                            t.name + "[" + name + "=" + std::to_string(value) + "]",
                            {}});
      }
    }
    const KnobSpace space = KnobSpace::Parse(source, t.name);
    for (const KnobConfig& c : FarFromDefaults(space, 2))
      requests.push_back({space.Apply(c), t.name + "[" + space.Describe(c) + "]", {}});
  }
  ASSERT_GE(requests.size(), 3u);
  const auto start = std::chrono::steady_clock::now();
  const auto results = builder->BuildAll(requests);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].ok) << requests[i].name << "\n" << results[i].log;
    for (const KernelResources& r : results[i].resources) {
      std::cout << "  " << requests[i].name << " " << r.demangled << ": " << r.registers
                << " registers, spills " << r.spill_store_bytes << "/" << r.spill_load_bytes
                << " bytes\n";
    }
  }
  std::cout << requests.size() << " compiles in " << seconds << " s\n";
}

}  // namespace
}  // namespace kopt
