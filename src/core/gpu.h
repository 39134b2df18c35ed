// Whether this machine has a usable CUDA device, asked of the driver directly.
#pragma once

namespace kopt {

/// True when libcuda loads and reports at least one device. Does not create
/// a context in this process beyond cuInit.
bool HaveCudaDevice();

/// Compute capability of device `ordinal` as e.g. 90, or 0 when unknown.
int CudaComputeCapability(int ordinal = 0);

}  // namespace kopt
