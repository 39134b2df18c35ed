"""Tamper evidence for the functions timing and verification rely on.

`install()` runs at worker start-up, before any candidate is imported: it saves
references to the clocks, the CUDA event and synchronisation functions and the
torch functions the worker's own checks call. The timers use only the saved
references (`ORIG`), so a candidate that patches `torch.cuda.Event`,
`torch.cuda.synchronize` or `time.perf_counter` cannot change what is measured.
`check_and_restore()` runs after a candidate is loaded and after each candidate
call: every watched attribute must still be the saved object (identity); each
one that is not is named in the reply's `tampered` list and put back, so the
checks that follow run the real functions. The verdict (C++) rejects any
tampering: a candidate has no honest reason to replace them.

An in-process defence cannot be complete (a candidate can reach this module's
own dict too); the point is that a patch has to be aimed at kopt itself, which
is no longer a "fast timer" trick but an attack on the harness.
"""

from __future__ import annotations

import inspect
import time
import types
from typing import Dict, List, Tuple

import torch

_MISSING = object()

# (object path, attribute) the worker relies on.
_WATCHED: List[Tuple[str, str]] = [
    ("time", "perf_counter"), ("time", "perf_counter_ns"), ("time", "time"), ("time", "monotonic"),
    ("time", "sleep"), ("os", "urandom"),
    ("torch", "Tensor"), ("torch", "equal"), ("torch", "isnan"), ("torch", "isinf"), ("torch", "isfinite"),
    ("torch", "where"), ("torch", "zeros"), ("torch", "zeros_like"), ("torch", "empty"), ("torch", "empty_like"),
    ("torch", "sum"), ("torch", "manual_seed"), ("torch", "no_grad"), ("torch", "randint"),
    ("torch", "randn"), ("torch", "rand"), ("torch", "tensor"),
    ("torch.linalg", "vector_norm"),
    ("torch.cuda", "synchronize"), ("torch.cuda", "Event"), ("torch.cuda", "empty_cache"),
    ("torch.cuda", "current_stream"), ("torch.cuda", "Stream"), ("torch.cuda", "_sleep"),
    ("torch.cuda.Event", "record"), ("torch.cuda.Event", "elapsed_time"), ("torch.cuda.Event", "synchronize"),
    ("torch.cuda.Event", "query"),
    ("torch.Tensor", "clone"), ("torch.Tensor", "copy_"), ("torch.Tensor", "item"), ("torch.Tensor", "to"),
    ("torch.Tensor", "double"), ("torch.Tensor", "detach"), ("torch.Tensor", "abs"), ("torch.Tensor", "abs_"),
    ("torch.Tensor", "max"), ("torch.Tensor", "sum"), ("torch.Tensor", "any"), ("torch.Tensor", "all"),
    ("torch.Tensor", "view"), ("torch.Tensor", "reshape"), ("torch.Tensor", "contiguous"),
    ("torch.Tensor", "data_ptr"), ("torch.Tensor", "fill_"), ("torch.Tensor", "masked_fill_"),
    ("torch.Tensor", "mul_"), ("torch.Tensor", "add_"), ("torch.Tensor", "__sub__"), ("torch.Tensor", "__eq__"),
    ("torch.Tensor", "__truediv__"), ("torch.Tensor", "numel"), ("torch.Tensor", "element_size"),
    ("torch.Tensor", "is_floating_point"), ("torch.Tensor", "storage"), ("torch.Tensor", "untyped_storage"),
    ("torch.Tensor", "__torch_function__"),
    ("torch.nn.Module", "__call__"), ("torch.nn.Module", "_call_impl"),
]


class _Saved(types.SimpleNamespace):
    pass


# Saved references, filled by install(). Timers call these, never the module
# attributes.
ORIG = _Saved(perf_counter=time.perf_counter, perf_counter_ns=time.perf_counter_ns,
              synchronize=None, Event=None, event_record=None, event_elapsed=None)

# (label, holder, name, own value or _MISSING, where found, found value)
_entries: List[tuple] = []
_installed = False


def _resolve(path: str):
    parts = path.split(".")
    obj = __import__(parts[0])
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


def install() -> None:
    """Saves the originals; idempotent. Call before any candidate is imported."""
    global _installed
    if _installed:
        return
    for path, name in _WATCHED:
        try:
            holder = _resolve(path)
        except Exception:  # noqa: BLE001  (torch.cuda.Event on a build without CUDA, ...)
            continue
        try:
            value = inspect.getattr_static(holder, name)
        except AttributeError:
            continue
        own = holder.__dict__.get(name, _MISSING) if hasattr(holder, "__dict__") else _MISSING
        owner = holder
        if own is _MISSING and isinstance(holder, type):
            owner = next((k for k in holder.__mro__ if k.__dict__.get(name, _MISSING) is value), holder)
        _entries.append((f"{path}.{name}", holder, name, own, owner, value))
    ORIG.perf_counter = time.perf_counter
    ORIG.perf_counter_ns = time.perf_counter_ns
    try:
        ORIG.synchronize = torch.cuda.synchronize
        ORIG.Event = torch.cuda.Event
        ORIG.event_record = torch.cuda.Event.record
        ORIG.event_elapsed = torch.cuda.Event.elapsed_time
        ORIG.current_stream = torch.cuda.current_stream
    except AttributeError:
        pass
    ORIG.spin = getattr(torch.cuda, "_sleep", None)  # a kernel that spins for N clock cycles
    import os

    ORIG.urandom = os.urandom  # the timed-call checks' secret draws
    # kopt's own functions and the saved references themselves: a patch aimed
    # at the harness (kopt.device.Device.timer, kopt.integrity.ORIG.synchronize)
    # is tampering too.
    import importlib

    for modname in _KOPT_MODULES:
        try:
            mod = importlib.import_module(modname)
        except Exception:  # noqa: BLE001
            continue
        for name, value in list(vars(mod).items()):
            if name.startswith("__") or not (callable(value) or isinstance(value, types.ModuleType)):
                continue
            _entries.append((f"{modname}.{name}", mod, name, value, mod, value))
            if isinstance(value, type) and value.__module__ == modname:
                for attr, v in list(vars(value).items()):
                    if not attr.startswith("__") and callable(v):
                        _entries.append((f"{modname}.{name}.{attr}", value, attr, v, value, v))
    for name, value in vars(ORIG).items():
        _entries.append((f"kopt.integrity.ORIG.{name}", ORIG, name, value, ORIG, value))
    _installed = True


_KOPT_MODULES = ("kopt.device", "kopt.timing", "kopt.evaluate", "kopt.checks", "kopt.tasks", "kopt.inputs",
                 "kopt.integrity")


def _changed(holder, name, own, owner, value) -> bool:
    # Two dict look-ups: cheap enough to run after every timed call.
    if holder.__dict__.get(name, _MISSING) is not own:
        return True
    return owner is not holder and owner.__dict__.get(name, _MISSING) is not value


def check_and_restore() -> List[str]:
    """Names of watched attributes the candidate replaced (each put back)."""
    if not _installed:
        return []
    bad: List[str] = []
    for label, holder, name, own, owner, value in _entries:
        if not _changed(holder, name, own, owner, value):
            continue
        bad.append(label)
        try:
            if own is _MISSING:
                if name in holder.__dict__:
                    delattr(holder, name)
                if owner is not holder and owner.__dict__.get(name, _MISSING) is not value:
                    setattr(owner, name, value)
            else:
                setattr(holder, name, own)
        except Exception:  # noqa: BLE001  (restoring is best effort; the report stands)
            pass
    return bad


class Ledger:
    """Collects tampering seen during one request (deduplicated, in order)."""

    def __init__(self):
        self.names: List[str] = []

    def check(self) -> List[str]:
        for n in check_and_restore():
            if n not in self.names:
                self.names.append(n)
        return self.names


def exact_tensor(o) -> bool:
    """A plain torch.Tensor: not a subclass, not a lazy stand-in."""
    return type(o) is ORIG_TENSOR


ORIG_TENSOR = torch.Tensor


def plain(o):
    """The data of a tensor subclass as a plain tensor, without running the
    subclass's __torch_function__; None when that is impossible."""
    if type(o) is ORIG_TENSOR:
        return o
    try:
        with torch._C.DisableTorchFunction():
            t = ORIG_TENSOR.as_subclass(o, ORIG_TENSOR)
        t.data_ptr()
        return t
    except Exception:  # noqa: BLE001
        return None


def entries() -> Dict[str, object]:
    return {e[0]: e[-1] for e in _entries}
