#include "build/builder.h"

namespace kopt {

Json ToJson(const KernelResources& k) {
  return Json{{"kernel", k.kernel},
              {"demangled", k.demangled},
              {"arch", k.arch},
              {"registers", k.registers},
              {"smem_bytes", k.smem_bytes},
              {"cmem_bytes", k.cmem_bytes},
              {"stack_bytes", k.stack_bytes},
              {"spill_store_bytes", k.spill_store_bytes},
              {"spill_load_bytes", k.spill_load_bytes}};
}

KernelResources KernelResourcesFromJson(const Json& j) {
  KernelResources k;
  k.kernel = j.value("kernel", "");
  k.demangled = j.value("demangled", k.kernel);
  k.arch = j.value("arch", "");
  k.registers = j.value("registers", 0);
  k.smem_bytes = j.value("smem_bytes", 0L);
  k.cmem_bytes = j.value("cmem_bytes", 0L);
  k.stack_bytes = j.value("stack_bytes", 0L);
  k.spill_store_bytes = j.value("spill_store_bytes", 0L);
  k.spill_load_bytes = j.value("spill_load_bytes", 0L);
  return k;
}

Json ToJson(const BuildResult& r) {
  Json resources = Json::array();
  for (const auto& k : r.resources) resources.push_back(ToJson(k));
  return Json{{"ok", r.ok},
              {"hash", r.hash},
              {"so_path", r.so_path.string()},
              {"log", r.log},
              {"cache_hit", r.cache_hit},
              {"compile_s", r.compile_s},
              {"arch", r.arch},
              {"resources", std::move(resources)}};
}

BuildResult BuildResultFromJson(const Json& j) {
  BuildResult r;
  r.ok = j.value("ok", false);
  r.hash = j.value("hash", "");
  r.so_path = j.value("so_path", "");
  r.log = j.value("log", "");
  r.cache_hit = j.value("cache_hit", false);
  r.compile_s = j.value("compile_s", 0.0);
  r.arch = j.value("arch", "");
  if (auto it = j.find("resources"); it != j.end() && it->is_array()) {
    for (const auto& k : *it) r.resources.push_back(KernelResourcesFromJson(k));
  }
  return r;
}

}  // namespace kopt
