"""Seeded input generation and small tensor helpers."""

from __future__ import annotations

import random
from typing import Any, List

import torch

from .errors import TaskLoadError

_TORCH_DEVICE_CTX = hasattr(torch, "device") and hasattr(torch.device("cpu"), "__enter__")


def seed_all(seed: int) -> None:
    torch.manual_seed(int(seed))
    random.seed(int(seed))
    try:
        import numpy as np

        np.random.seed(int(seed) % (2 ** 32))
    except Exception:
        pass


def to_device(x: Any, device: torch.device) -> Any:
    if isinstance(x, torch.Tensor):
        return x if x.device == device else x.to(device)
    if isinstance(x, list):
        return [to_device(v, device) for v in x]
    if isinstance(x, tuple):
        return tuple(to_device(v, device) for v in x)
    if isinstance(x, dict):
        return {k: to_device(v, device) for k, v in x.items()}
    return x


def make_inputs(task_module, seed: int, device: torch.device) -> List[Any]:
    """Calls the task's get_inputs() under `seed`, on `device` where torch
    supports a device context (torch >= 2.0), then moves stray tensors."""
    seed_all(seed)
    try:
        if _TORCH_DEVICE_CTX and device.type != "cpu":
            with device:
                raw = task_module.get_inputs()
        else:
            raw = task_module.get_inputs()
    except Exception as e:
        raise TaskLoadError(f"get_inputs() failed: {type(e).__name__}: {e}", e) from e
    if isinstance(raw, (list, tuple)):
        raw = list(raw)
    else:
        raw = [raw]
    return [to_device(v, device) for v in raw]


def clone_args(args: List[Any]) -> List[Any]:
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a.clone())
        elif isinstance(a, (list, tuple)):
            out.append(type(a)(clone_args(list(a))))
        else:
            out.append(a)
    return out


def flatten_outputs(out: Any) -> List[Any]:
    """A tensor or (nested) tuple/list of tensors -> flat list."""
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            flat.extend(flatten_outputs(o))
        return flat
    return [out]


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype and bytes (NaN-safe)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    a = a.detach().contiguous().reshape(-1)
    b = b.detach().contiguous().reshape(-1)
    if a.dtype == torch.bool:
        return bool(torch.equal(a, b))
    try:
        return bool(torch.equal(a.view(torch.uint8), b.view(torch.uint8)))
    except RuntimeError:
        return bool(torch.equal(a, b))


def nbytes(t: torch.Tensor) -> int:
    return int(t.numel() * t.element_size())


def storage_span(t: torch.Tensor):
    """(start, end) byte addresses of the storage behind t."""
    try:
        s = t.untyped_storage()
        return s.data_ptr(), s.data_ptr() + s.nbytes()
    except AttributeError:
        s = t.storage()
        return s.data_ptr(), s.data_ptr() + s.nbytes()


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device:
        return False
    a0, a1 = storage_span(a)
    b0, b1 = storage_span(b)
    if a1 <= a0 or b1 <= b0:
        return False
    return a0 < b1 and b0 < a1


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")
