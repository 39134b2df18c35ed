#include "task/device.h"

#include <algorithm>

#include "core/hash.h"

namespace kopt {

std::string DeviceInfo::Key() const {
  std::string clean;
  for (char c : name) clean += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return clean + "-sm" + std::to_string(sm_count) + "-torch" + torch_version;
}

DeviceInfo DeviceInfoFromHello(const Json& hello) {
  DeviceInfo d;
  d.torch_version = hello.value("torch", "");
  const Json& dev = hello.contains("device") ? hello["device"] : Json::object();
  d.name = dev.value("name", "unknown");
  if (dev.contains("cc") && dev["cc"].is_array() && dev["cc"].size() == 2) {
    d.cc_major = dev["cc"][0].get<int>();
    d.cc_minor = dev["cc"][1].get<int>();
  }
  auto num = [&](const char* k) { return dev.contains(k) && dev[k].is_number() ? dev[k].get<double>() : 0.0; };
  d.sm_count = static_cast<int>(num("sm_count"));
  d.l2_bytes = static_cast<long long>(num("l2_bytes"));
  d.memory_bytes = static_cast<long long>(num("memory_bytes"));
  d.max_sm_clock_mhz = num("max_sm_clock_mhz");
  d.available = dev.value("available", false);
  return d;
}

Json ToJson(const DeviceInfo& d) {
  return Json{{"name", d.name},         {"cc", {d.cc_major, d.cc_minor}}, {"sm_count", d.sm_count},
              {"l2_bytes", d.l2_bytes}, {"memory_bytes", d.memory_bytes}, {"max_sm_clock_mhz", d.max_sm_clock_mhz},
              {"available", d.available}, {"torch", d.torch_version}};
}

DeviceInfo DeviceInfoFromJson(const Json& j) {
  if (!j.is_object()) return DeviceInfo{};
  const Json& torch = j.contains("torch") && j["torch"].is_string() ? j["torch"] : Json("");
  return DeviceInfoFromHello(Json{{"device", j}, {"torch", torch}});
}

std::optional<NominalRates> NominalRatesPerSmClock(int major, int minor) {
  // Dense FLOP per SM per clock. Hopper (9.0): 128 FP32 lanes x 2, and the
  // H100 SXM tensor peaks (989 TFLOP/s bf16 at 132 SMs x 1.83 GHz -> 4096).
  if (major == 9) return NominalRates{256, 2048, 4096, 4096};
  // Ampere A100 (8.0): 64 FP32 lanes x 2; 312 TFLOP/s fp16 at 108 SMs x 1.41 GHz.
  if (major == 8 && minor == 0) return NominalRates{128, 1024, 2048, 2048};
  // Ada / GA10x (8.6, 8.9): 128 FP32 lanes x 2; tensor rates per SM halve.
  if (major == 8) return NominalRates{256, 512, 1024, 1024};
  return std::nullopt;
}

Json ToJson(const Ceilings& c) {
  return Json{{"bandwidth_bytes_per_s", c.bandwidth_bytes_per_s},
              {"fp32_flops_per_s", c.fp32_flops_per_s},
              {"tf32_flops_per_s", c.tf32_flops_per_s},
              {"bf16_flops_per_s", c.bf16_flops_per_s},
              {"fp16_flops_per_s", c.fp16_flops_per_s},
              {"probes", c.probes}};
}

Ceilings CeilingsFromJson(const Json& j) {
  Ceilings c;
  c.bandwidth_bytes_per_s = j.value("bandwidth_bytes_per_s", 0.0);
  c.fp32_flops_per_s = j.value("fp32_flops_per_s", 0.0);
  c.tf32_flops_per_s = j.value("tf32_flops_per_s", 0.0);
  c.bf16_flops_per_s = j.value("bf16_flops_per_s", 0.0);
  c.fp16_flops_per_s = j.value("fp16_flops_per_s", 0.0);
  c.probes = j.value("probes", Json::object());
  return c;
}

}  // namespace kopt
