// Whether this machine has a usable CUDA device, asked of the driver directly.
#pragma once

#include <string>

namespace kopt {

/// True when libcuda loads and reports at least one device. Does not create
/// a context in this process beyond cuInit.
bool HaveCudaDevice();

/// Compute capability of device `ordinal` as e.g. 90, or 0 when unknown.
int CudaComputeCapability(int ordinal = 0);

/// The nvcc target for code that runs on a device of compute capability
/// `cc` (e.g. 90): "sm_90a" for 9.0, whose warpgroup MMA (wgmma), setmaxnreg
/// and TMA multicast exist only in the arch-specific target, else "sm_<cc>";
/// "sm_90" when `cc` is 0 (unknown: no GPU here).
std::string NativeArch(int cc);

}  // namespace kopt
