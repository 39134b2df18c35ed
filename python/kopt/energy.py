"""NVML through ctypes (no pynvml): the total-energy counter and max clocks.

Every function returns None when NVML or the query is unavailable.
"""

from __future__ import annotations

import ctypes
from typing import Optional

_NVML_CLOCK_SM = 1
_NVML_CLOCK_MEM = 2


class _Nvml:
    def __init__(self):
        self.lib = None
        self.error: Optional[str] = None
        self._handles = {}
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            init = getattr(lib, "nvmlInit_v2", None) or lib.nvmlInit
            rc = init()
            if rc != 0:
                self.error = f"nvmlInit returned {rc}"
                return
            self.lib = lib
        except (OSError, AttributeError) as e:
            self.error = str(e)

    def handle(self, device_index: int):
        if self.lib is None:
            return None
        if device_index in self._handles:
            return self._handles[device_index]
        h = ctypes.c_void_p()
        found = False
        try:
            import torch

            props = torch.cuda.get_device_properties(device_index)
            uuid = getattr(props, "uuid", None)
            if uuid is not None:
                text = str(uuid)
                if not text.startswith("GPU-") and not text.startswith("MIG-"):
                    text = "GPU-" + text
                fn = getattr(self.lib, "nvmlDeviceGetHandleByUUID", None)
                if fn is not None and fn(ctypes.c_char_p(text.encode()), ctypes.byref(h)) == 0:
                    found = True
            if not found and hasattr(props, "pci_bus_id"):
                bus = "%08x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), props.pci_bus_id,
                                            getattr(props, "pci_device_id", 0))
                fn = getattr(self.lib, "nvmlDeviceGetHandleByPciBusId_v2", None)
                if fn is not None and fn(ctypes.c_char_p(bus.encode()), ctypes.byref(h)) == 0:
                    found = True
        except Exception:
            pass
        if not found:
            # Fall back to the index, mapped through CUDA_VISIBLE_DEVICES when it
            # lists plain integers.
            import os

            idx = device_index
            vis = os.environ.get("CUDA_VISIBLE_DEVICES")
            if vis:
                parts = [p.strip() for p in vis.split(",") if p.strip()]
                if device_index < len(parts) and parts[device_index].isdigit():
                    idx = int(parts[device_index])
            fn = getattr(self.lib, "nvmlDeviceGetHandleByIndex_v2", None) or getattr(
                self.lib, "nvmlDeviceGetHandleByIndex", None)
            if fn is not None and fn(ctypes.c_uint(idx), ctypes.byref(h)) == 0:
                found = True
        self._handles[device_index] = h if found else None
        return self._handles[device_index]


_nvml: Optional[_Nvml] = None


def nvml() -> _Nvml:
    global _nvml
    if _nvml is None:
        _nvml = _Nvml()
    return _nvml


def total_energy_mj(device_index: int) -> Optional[int]:
    """The GPU's total energy counter in millijoules, or None."""
    n = nvml()
    h = n.handle(device_index)
    if h is None:
        return None
    value = ctypes.c_ulonglong()
    try:
        rc = n.lib.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(value))
    except AttributeError:
        return None
    return int(value.value) if rc == 0 else None


def max_clock_mhz(device_index: int, which: str) -> Optional[int]:
    n = nvml()
    h = n.handle(device_index)
    if h is None:
        return None
    clock = {"sm": _NVML_CLOCK_SM, "mem": _NVML_CLOCK_MEM}[which]
    value = ctypes.c_uint()
    try:
        rc = n.lib.nvmlDeviceGetMaxClockInfo(h, ctypes.c_int(clock), ctypes.byref(value))
    except AttributeError:
        return None
    return int(value.value) if rc == 0 and value.value > 0 else None
