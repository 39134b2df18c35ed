"""Seeded input generation and small tensor helpers."""

from __future__ import annotations

import random
from typing import Any, List, Optional

import torch

from .errors import BadRequest, TaskLoadError

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


# Input distributions a candidate is checked on (docs/verification.md,
# "Input distributions"). "task" is get_inputs() as written; the others
# transform its floating-point tensors, so a kernel that is right only on the
# task's own distribution (ReLU as the identity on [0, 1), a chain that is
# constant there) is caught:
#   signed: every element's sign flipped at random (magnitudes kept);
#   wide:   signed, and WIDE_SCALE times larger.
DISTRIBUTIONS = ("task", "signed", "wide")
WIDE_SCALE = 4.0
_SIGN_SEED_OFFSET = 104729


def describe_distribution(name: str) -> str:
    return {"task": "the task's get_inputs()",
            "signed": "get_inputs() with each element's sign flipped at random",
            "wide": f"get_inputs() with random signs and {WIDE_SCALE:g}x the scale"}[name]


def apply_distribution(args: List[Any], name: Optional[str], seed: int) -> List[Any]:
    """The forward inputs under distribution `name` (new tensors; integer and
    bool tensors and Python scalars are left alone: they are indices, labels,
    sizes)."""
    if name in (None, "task"):
        return args
    if name not in DISTRIBUTIONS:
        raise BadRequest(f"unknown input distribution {name!r} (known: {', '.join(DISTRIBUTIONS)})")
    out = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel() > 0:
            gen = torch.Generator(device=a.device)
            gen.manual_seed(int(seed) * 7919 + _SIGN_SEED_OFFSET + i)
            signs = torch.randint(0, 2, a.shape, generator=gen, device=a.device).to(a.dtype).mul_(2).sub_(1)
            t = torch.empty_like(a)
            t.copy_(a)
            t.mul_(signs)
            if name == "wide":
                t.mul_(WIDE_SCALE)
            out.append(t)
        else:
            out.append(a)
    return out


def make_inputs(task_module, seed: int, device: torch.device, distribution: Optional[str] = None) -> List[Any]:
    """Calls the task's get_inputs() under `seed`, on `device` where torch
    supports a device context (torch >= 2.0), then moves stray tensors and
    applies `distribution` (None or "task": as written)."""
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
    return apply_distribution([to_device(v, device) for v in raw], distribution, seed)


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
