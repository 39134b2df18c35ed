// What kopt derives from the worker's `capture` and `ceilings` replies: the
// task's bundle (signature, graph, degeneracy flags, floor) and the device's
// ceilings.
#pragma once

#include <string>

#include "core/task.h"
#include "run/protocol.h"
#include "task/bundle.h"
#include "task/device.h"

namespace kopt {

/// Builds the bundle from a capture reply: the signature and graph, the
/// degeneracy flags, and the floor from the ceilings.
TaskBundle BundleFromCapture(const Task& task, const std::string& task_hash, const CaptureReply& capture,
                             const DeviceInfo& device, const Ceilings& ceilings,
                             const DegeneracyThresholds& thresholds = {});

/// Builds ceilings from a `ceilings` reply and the device's nominal rates.
Ceilings CeilingsFromProbes(const CeilingsReply& reply, const DeviceInfo& device);

}  // namespace kopt
