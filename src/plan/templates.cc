#include "plan/templates.h"

#include <algorithm>
#include <regex>

#include "core/error.h"
#include "core/json.h"

namespace kopt {

namespace fs = std::filesystem;

namespace {
// `#define KOPT_NAME value` at the start of a line (value: an integer).
const std::regex& SlotLine() {
  static const std::regex re(
      R"(^([ \t]*#define[ \t]+)(KOPT_[A-Z0-9_]+)([ \t]+)(-?[0-9]+)([^\n]*)$)",
      std::regex::multiline);
  return re;
}
}  // namespace

std::vector<KernelTemplate> LoadTemplates(const fs::path& kernels_dir) {
  std::vector<KernelTemplate> out;
  if (kernels_dir.empty() || !fs::is_directory(kernels_dir)) return out;
  for (const auto& e : fs::directory_iterator(kernels_dir)) {
    const fs::path manifest = e.path() / "template.json";
    if (!e.is_directory() || !fs::exists(manifest)) continue;
    const Json j = ReadJsonFile(manifest);
    try {
      for (const Json& t : j.at("templates")) {
        KernelTemplate k;
        k.path = e.path() / t.at("file").get<std::string>();
        k.id = e.path().filename().string() + "/" + k.path.stem().string();
        k.op_class = t.value("class", e.path().filename().string());
        k.ops = t.value("ops", std::vector<std::string>{});
        const Json slots = t.value("slots", Json::object());
        for (const auto& [name, s] : slots.items()) {
          TemplateSlot slot;
          slot.name = name;
          slot.default_value = s.at("default").get<long long>();
          slot.values = s.value("values", std::vector<long long>{});
          slot.about = s.value("about", "");
          k.slots.push_back(slot);
        }
        k.source = ReadTextFile(k.path);
        out.push_back(std::move(k));
      }
    } catch (const Json::exception& ex) {
      throw Error(manifest.string() + " is malformed (" + ex.what() +
                  "): see kernels/README.md for its fields.");
    }
  }
  std::sort(out.begin(), out.end(),
            [](const KernelTemplate& a, const KernelTemplate& b) { return a.id < b.id; });
  return out;
}

std::map<std::string, std::string> SlotValues(const std::string& source) {
  std::map<std::string, std::string> out;
  for (std::sregex_iterator it(source.begin(), source.end(), SlotLine()), end; it != end; ++it)
    out[(*it)[2].str()] = (*it)[4].str();
  return out;
}

std::string SetSlots(const std::string& source, const std::map<std::string, long long>& values) {
  std::string out;
  std::map<std::string, bool> seen;
  std::size_t last = 0;
  for (std::sregex_iterator it(source.begin(), source.end(), SlotLine()), end; it != end; ++it) {
    const std::smatch& m = *it;
    out += source.substr(last, static_cast<std::size_t>(m.position(0)) - last);
    auto v = values.find(m[2].str());
    if (v == values.end()) {
      out += m[0].str();
    } else {
      out += m[1].str() + m[2].str() + m[3].str() + std::to_string(v->second) + m[5].str();
      seen[v->first] = true;
    }
    last = static_cast<std::size_t>(m.position(0) + m.length(0));
  }
  out += source.substr(last);
  for (const auto& [name, value] : values)
    if (!seen.count(name))
      throw Error("the template has no `#define " + name +
                  " <value>` slot line: check its template.json.");
  return out;
}

}  // namespace kopt
