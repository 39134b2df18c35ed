// The GPU a run measures on, and the ceilings kopt measured on it.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/json.h"

namespace kopt {

struct DeviceInfo {
  std::string name;        ///< e.g. "NVIDIA H200"; "cpu" for the test worker
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  long long l2_bytes = 0;
  long long memory_bytes = 0;
  double max_sm_clock_mhz = 0;
  bool available = false;  ///< a CUDA device is there
  std::string torch_version;
  std::string Key() const;  ///< stable id for caches: name, SMs, torch version
};

/// The device of a `hello` reply ({"torch", "device": {...}}).
DeviceInfo DeviceInfoFromHello(const Json& hello);
Json ToJson(const DeviceInfo& d);
/// The inverse of ToJson (the device in bundle, profile and bench files).
DeviceInfo DeviceInfoFromJson(const Json& j);

/// Peak rates the floor uses. Each is the best of kopt's measured probes and
/// the architecture's nominal rate at the device's max clock, so the floor
/// never exceeds what a well-written kernel can reach.
struct Ceilings {
  double bandwidth_bytes_per_s = 0;
  double fp32_flops_per_s = 0;    ///< CUDA-core FP32 (strict fp32 matrix work)
  double tf32_flops_per_s = 0;
  double bf16_flops_per_s = 0;
  double fp16_flops_per_s = 0;
  Json probes;                    ///< the worker's probe results, as it sent them
};

Json ToJson(const Ceilings& c);
Ceilings CeilingsFromJson(const Json& j);

/// Nominal dense rates per SM per clock (FLOP) for a compute capability,
/// from the vendor's published peaks; nullopt when unknown.
struct NominalRates {
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0;
};
std::optional<NominalRates> NominalRatesPerSmClock(int cc_major, int cc_minor);

}  // namespace kopt
