"""The worker's device: properties for `hello`, synchronisation, timers."""

from __future__ import annotations

import ctypes
import os
import time
from typing import Optional

import torch

from . import energy
from .integrity import ORIG


def _cuda_attribute(device_index: int, attribute: int) -> Optional[int]:
    """cuDeviceGetAttribute through the driver library, or None."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        if lib.cuInit(0) != 0:
            return None
        dev = ctypes.c_int()
        if lib.cuDeviceGet(ctypes.byref(dev), ctypes.c_int(device_index)) != 0:
            return None
        value = ctypes.c_int()
        if lib.cuDeviceGetAttribute(ctypes.byref(value), ctypes.c_int(attribute), dev) != 0:
            return None
        return int(value.value)
    except (OSError, AttributeError):
        return None


# The timer's bridge over the host's gap between calls (Device.timer): its
# first guess and its cap, in microseconds.
INITIAL_GAP_US = 500.0
MAX_BRIDGE_US = 5000.0

_CU_ATTR_CLOCK_RATE = 13        # kHz
_CU_ATTR_MEMORY_CLOCK_RATE = 36  # kHz
_CU_ATTR_L2_CACHE_SIZE = 38      # bytes


class Device:
    def __init__(self, spec: str):
        self.spec = spec
        self.torch_device = torch.device(spec)
        self.is_cuda = self.torch_device.type == "cuda"
        if self.is_cuda:
            if not torch.cuda.is_available():
                raise RuntimeError(f"device {spec} requested but torch.cuda is not available")
            self.index = self.torch_device.index if self.torch_device.index is not None else 0
            self.torch_device = torch.device("cuda", self.index)
            torch.cuda.set_device(self.index)
        else:
            self.index = None
        self._info = None

    # -- facts ---------------------------------------------------------------
    def info(self) -> dict:
        if self._info is not None:
            return self._info
        if not self.is_cuda:
            mem = None
            try:
                mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            except (ValueError, OSError, AttributeError):
                pass
            self._info = {"name": "cpu", "cc": [0, 0], "sm_count": 0, "l2_bytes": 0,
                          "memory_bytes": mem, "max_sm_clock_mhz": None, "max_mem_clock_mhz": None,
                          "available": False}
            return self._info
        p = torch.cuda.get_device_properties(self.index)
        l2 = getattr(p, "L2_cache_size", None)
        if not l2:
            l2 = _cuda_attribute(self.index, _CU_ATTR_L2_CACHE_SIZE)
        sm_clock = energy.max_clock_mhz(self.index, "sm")
        if sm_clock is None:
            khz = _cuda_attribute(self.index, _CU_ATTR_CLOCK_RATE)
            sm_clock = khz / 1000.0 if khz else None
        mem_clock = energy.max_clock_mhz(self.index, "mem")
        if mem_clock is None:
            khz = _cuda_attribute(self.index, _CU_ATTR_MEMORY_CLOCK_RATE)
            mem_clock = khz / 1000.0 if khz else None
        self._info = {"name": p.name, "cc": [int(p.major), int(p.minor)],
                      "sm_count": int(p.multi_processor_count), "l2_bytes": int(l2) if l2 else None,
                      "memory_bytes": int(p.total_memory), "max_sm_clock_mhz": sm_clock,
                      "max_mem_clock_mhz": mem_clock, "available": True}
        return self._info

    def l2_bytes(self) -> int:
        return int(self.info().get("l2_bytes") or 0) if self.is_cuda else 0

    def free_bytes(self) -> Optional[int]:
        if self.is_cuda:
            try:
                return int(torch.cuda.mem_get_info(self.index)[0])
            except Exception:
                return None
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return None

    # -- helpers -------------------------------------------------------------
    def sync(self) -> None:
        # The saved function (kopt/integrity.py): a candidate's patch of
        # torch.cuda.synchronize cannot change what it does.
        if self.is_cuda:
            ORIG.synchronize(self.index)

    def empty_cache(self) -> None:
        if self.is_cuda:
            torch.cuda.empty_cache()

    def energy_mj(self) -> Optional[int]:
        if not self.is_cuda:
            return None
        return energy.total_energy_mj(self.index)

    def timer(self, pre=None, head_start_us: float = 0.0, bridge=None):
        """Returns a callable that times one call: (fn) -> (event_ms|None,
        host_ms, what fn returned).

        `pre` (the L2 flush) is enqueued after the synchronize and before the
        start event, behind a kernel that spins for `head_start_us`: the GPU
        is busy with both while the host gets to the call, so the start event
        is stamped after the call's first launch is queued and the host's own
        launch latency (kopt's Python and ctypes, 20-50 us, more when the host
        is busy) does not count as GPU time. Measured on the H200: with the
        flush alone (~30 us) the host's jitter leaked into the events and one
        process's median ran 5% slow. The host clock includes the spin and the
        flush; so does the empty call's.

        `bridge(us)` (optional) enqueues about `us` microseconds of GPU work.
        It is called after each call returned, sized to the host's gap before
        the next one (a running estimate, capped at MAX_BRIDGE_US), so the GPU
        is not idle while the caller does its bookkeeping. Measured on the
        H200 (bench/results, session 13): after idle gaps of about a
        millisecond the GPU ran memory-bound calls ~11% slower for stretches
        of tens of milliseconds, with nvidia-smi still reporting full clocks;
        kopt's loop left the GPU idle ~80% of the time, so candidate and eager
        drifted into that state together, and the clean process (less host
        work per call) mostly did not. The bridge runs after the end event and
        the next call starts with a synchronize, so it is in neither clock.

        Only the functions saved at start-up (integrity.ORIG) are used, so a
        candidate that patches torch.cuda.Event, synchronize or the clocks
        cannot change the measurement."""
        if self.is_cuda:
            start = ORIG.Event(enable_timing=True)
            end = ORIG.Event(enable_timing=True)
            sync, record, elapsed, clock = ORIG.synchronize, ORIG.event_record, ORIG.event_elapsed, ORIG.perf_counter_ns
            stream = ORIG.current_stream(self.index)
            spin = ORIG.spin if head_start_us > 0 else None
            mhz = self.info().get("max_sm_clock_mhz") or 2000.0
            cycles = int(head_start_us * mhz)  # at a lower clock the spin only lasts longer

            gap = {"us": INITIAL_GAP_US, "left_ns": None}

            def run(fn):
                if bridge is not None and gap["left_ns"] is not None:
                    seen = (clock() - gap["left_ns"]) / 1e3
                    gap["us"] = min(MAX_BRIDGE_US, 0.7 * gap["us"] + 0.3 * seen)
                sync()
                t0 = clock()
                if spin is not None:
                    spin(cycles)
                if pre is not None:
                    pre()
                record(start, stream)
                result = fn()
                record(end, stream)
                sync()
                t1 = clock()
                if bridge is not None:
                    bridge(1.2 * gap["us"])
                    gap["left_ns"] = clock()
                return elapsed(start, end), (t1 - t0) / 1e6, result

            return run

        clock_cpu = ORIG.perf_counter_ns

        def run_cpu(fn):
            if pre is not None:
                pre()
            t0 = clock_cpu()
            result = fn()
            t1 = clock_cpu()
            return None, (t1 - t0) / 1e6, result

        return run_cpu
