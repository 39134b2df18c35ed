"""The mechanism behind a task's contract (docs/verification.md, "Contract"):
recording the torch operators a forward calls, emulating a reduced-precision
reference, and loading the task with a second shape. Facts only; the verdict
in src/run/verdict.cc decides what is allowed."""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from typing import Any, Dict, Optional

import torch

from .errors import BadRequest, TaskLoadError

try:
    from torch.utils._python_dispatch import TorchDispatchMode
except Exception:  # pragma: no cover - torch < 1.13
    TorchDispatchMode = None

# Mantissa bits a precision policy lets matrix operands keep (fp32 has 23).
MANTISSA_BITS = {"tf32": 10, "bf16": 7}

_counter = itertools.count()


def parse(spec: Any) -> dict:
    """The request's `contract` object, checked: {"precision": str,
    "record_ops": bool, "second_shape": {name: int}}; missing means defaults."""
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise BadRequest("`contract` must be an object")
    precision = spec.get("precision", "strict") or "strict"
    if precision not in ("strict", "tf32", "bf16"):
        raise BadRequest(f"contract.precision {precision!r} is not strict, tf32 or bf16")
    shape = spec.get("second_shape") or {}
    if not isinstance(shape, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in shape.items()):
        raise BadRequest("contract.second_shape must map names to integers")
    return {"precision": precision, "record_ops": bool(spec.get("record_ops", False)), "second_shape": shape}


# ----------------------------------------------------------------------------
# Which torch operators a forward calls

if TorchDispatchMode is not None:
    class OpRecorder(TorchDispatchMode):
        """Counts every operator that reaches torch's dispatcher, by name
        (`aten::relu`), including those called from C++ extensions; kernels
        launched through ctypes (kopt.load_cuda) are invisible to it, as they
        should be: they are the candidate's own."""

        def __init__(self):
            super().__init__()
            self.ops: Dict[str, int] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func._schema.name
            self.ops[name] = self.ops.get(name, 0) + 1
            return func(*args, **(kwargs or {}))

    class RoundMatrixOperands(TorchDispatchMode):
        """Runs matrix-class operators (matmul, convolution, attention) with
        their float32 tensor operands rounded to `bits` mantissa bits, as TF32
        or bf16 tensor cores read them; accumulation stays fp32."""

        def __init__(self, bits: int):
            super().__init__()
            self.bits = bits

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            from .capture import _base_name, is_matrix_op

            base = _base_name(func)
            if is_matrix_op(base):
                # The product's operands; an added term (addmm's bias, a
                # convolution's bias) stays fp32, as in the tensor-core epilogue.
                first = 1 if base.startswith(("add", "baddbmm", "_addmm")) else 0
                last = first + (3 if "attention" in base or "scaled_dot_product" in base else 2)
                args = tuple(round_mantissa(a, self.bits) if first <= i < last and isinstance(a, torch.Tensor)
                             else a for i, a in enumerate(args))
            return func(*args, **kwargs)
else:  # pragma: no cover
    OpRecorder = None
    RoundMatrixOperands = None


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def recording(enabled: bool):
    """An OpRecorder context when `enabled` and available, else a no-op one
    (whose `ops` is None)."""
    if enabled and OpRecorder is not None:
        return OpRecorder()
    n = _Null()
    n.ops = None
    return n


def round_mantissa(t: torch.Tensor, bits: int) -> torch.Tensor:
    """A float32 tensor rounded to `bits` mantissa bits (round to nearest,
    ties to even), still stored as float32; other dtypes unchanged."""
    if t.dtype != torch.float32 or bits >= 23:
        return t
    drop = 23 - bits
    b = t.detach().contiguous().view(torch.int32).to(torch.int64)
    lsb = (b >> drop) & 1
    b = (b + ((1 << (drop - 1)) - 1) + lsb) & ~((1 << drop) - 1)
    out = (b & 0xFFFFFFFF).to(torch.int32).view(torch.float32).view(t.shape)
    # NaN and infinity stay what they were (rounding must not carry into them).
    return torch.where(torch.isfinite(t), out, t)


def forward_lowp(ref, args, seed, precision: str):
    """The fp32 reference with its matrix operands rounded to `precision`
    (None for strict, or when the mechanism is unavailable)."""
    bits = MANTISSA_BITS.get(precision)
    if bits is None or RoundMatrixOperands is None:
        return None
    with RoundMatrixOperands(bits):
        return ref.forward(args, seed)


# ----------------------------------------------------------------------------
# The second shape

def task_variant(path: str, overrides: Dict[str, int]):
    """A fresh copy of the task module with module-level integers replaced
    (before get_inputs()/get_init_inputs() run, which read them at call
    time). A name that is not a module-level int is the contract's mistake:
    TaskLoadError, one sentence."""
    from .tasks import load_task

    load_task(path)  # same checks and errors as the first shape
    real = os.path.realpath(path)
    name = f"_kopt_task_shape2_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, real)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001
        sys.modules.pop(name, None)
        raise TaskLoadError(f"task {path} failed to import: {type(e).__name__}: {e}", e) from e
    for key, value in overrides.items():
        old = getattr(module, key, None)
        if not isinstance(old, int) or isinstance(old, bool):
            found = "not defined" if old is None and not hasattr(module, key) else f"a {type(old).__name__}"
            raise TaskLoadError(f"the contract's second shape sets {key}={value}, but in {path} `{key}` is "
                                f"{found}, not a module-level integer")
        setattr(module, key, value)
    return module


def describe_shape(overrides: Dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in overrides.items())
