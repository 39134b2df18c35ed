"""Error statistics between outputs, computed in float64 on the device.

Non-finite results are emitted as the finite sentinel 1e300 by the worker's
JSON writer (see worker.sanitize)."""

from __future__ import annotations

import math
from typing import Optional

import torch

from .inputs import dtype_name

TINY = torch.finfo(torch.float64).tiny


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(torch.float64)


def _item(x: torch.Tensor) -> float:
    return float(x.item())


def diff_abs(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a-b| in float64, where positions that are both NaN, or the same
    infinity, count as equal (0). A NaN on one side only gives NaN."""
    a64, b64 = _f64(a), _f64(b)
    d = (a64 - b64).abs_()
    if d.numel() == 0 or not bool(torch.isnan(d).any().item()):
        return d  # the common case: nothing non-finite on either side
    same = (a64 == b64) | (torch.isnan(a64) & torch.isnan(b64))
    return d.masked_fill_(same, 0.0)


def _max_nan(t: torch.Tensor) -> float:
    """max that returns NaN if any element is NaN (torch.max already does)."""
    if t.numel() == 0:
        return 0.0
    return _item(t.max())


def compare(a: torch.Tensor, b: torch.Tensor, atol: Optional[float] = None,
            rtol: Optional[float] = None) -> dict:
    """{"max_abs", "rel_l2"[, "worst_ratio"]} of candidate a against reference b.

    max_abs = max|a-b|, rel_l2 = ‖a-b‖ / max(‖b‖, tiny) (non-finite elements
    of b left out of ‖b‖), worst_ratio = max(|a-b| / (atol + rtol|b|)).
    A NaN on one side only makes every stat NaN; an infinity makes it inf."""
    d = diff_abs(a, b)
    with_ratio = atol is not None and rtol is not None
    if d.numel() == 0:
        out = {"max_abs": 0.0, "rel_l2": 0.0}
        if with_ratio:
            out["worst_ratio"] = 0.0
        return out
    if bool(torch.isnan(d).any().item()):
        out = {"max_abs": math.nan, "rel_l2": math.nan}
        if with_ratio:
            out["worst_ratio"] = math.nan
        return out
    b64 = _f64(b)
    b_fin = b64 if bool(torch.isfinite(b64).all().item()) else \
        torch.where(torch.isfinite(b64), b64, torch.zeros_like(b64))
    num = _item(torch.linalg.vector_norm(d))
    den = max(_item(torch.linalg.vector_norm(b_fin)), TINY)
    out = {"max_abs": _item(d.max()), "rel_l2": num / den}
    if with_ratio:
        denom = b64.abs().mul_(float(rtol)).add_(float(atol))
        ratio = d / denom
        if not float(atol) > 0:  # 0/0 where both the error and the tolerance are zero
            ratio = torch.where(d == 0, torch.zeros_like(d), ratio)
        out["worst_ratio"] = _item(ratio.max())
    return out


def value_stats(t: torch.Tensor) -> dict:
    """{"mean", "std", "max_abs", "numel", "nan", "inf"}; mean/std/max_abs
    over the finite elements (population std)."""
    x = _f64(t).reshape(-1)
    n = x.numel()
    if n == 0:
        return {"mean": 0.0, "std": 0.0, "max_abs": 0.0, "numel": 0, "nan": 0, "inf": 0}
    if bool(torch.isfinite(x).all().item()):
        nan = inf = 0
    else:
        nan = int(torch.isnan(x).sum().item())
        inf = int(torch.isinf(x).sum().item())
    finite = x[torch.isfinite(x)] if (nan or inf) else x
    if finite.numel() == 0:
        mean = std = max_abs = 0.0
    else:
        mean = _item(finite.mean())
        std = _item(finite.std(unbiased=False)) if finite.numel() > 1 else 0.0
        max_abs = _item(finite.abs().max())
    return {"mean": mean, "std": std, "max_abs": max_abs, "numel": n, "nan": nan, "inf": inf}


def rel_diff(a: torch.Tensor, b: torch.Tensor) -> Optional[float]:
    """‖a − b‖ / max(‖a‖, tiny); None when shapes or dtypes differ."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return None
    if a.numel() == 0:
        return 0.0
    d = diff_abs(a, b)
    if bool(torch.isnan(d).any().item()):
        return math.nan
    a64 = _f64(a)
    if not bool(torch.isfinite(a64).all().item()):
        a64 = torch.where(torch.isfinite(a64), a64, torch.zeros_like(a64))
    return _item(torch.linalg.vector_norm(d)) / max(_item(torch.linalg.vector_norm(a64)), TINY)


def max_abs(t: torch.Tensor) -> float:
    if t.numel() == 0:
        return 0.0
    return _max_nan(_f64(t).abs())


def count_nan_inf(t: torch.Tensor):
    if not (t.is_floating_point() or t.is_complex()):
        return 0, 0
    return int(torch.isnan(t).sum().item()), int(torch.isinf(t).sum().item())


def output_entry(cand: Optional[torch.Tensor], ref: torch.Tensor, ref64: Optional[torch.Tensor],
                 atol: float, rtol: float, poison: int, aliases: bool) -> dict:
    """One element of a check's `outputs` list."""
    e = {
        "shape": list(cand.shape) if cand is not None else None,
        "dtype": dtype_name(cand.dtype) if cand is not None else None,
        "shape_ok": cand is not None and tuple(cand.shape) == tuple(ref.shape),
        "dtype_ok": cand is not None and cand.dtype == ref.dtype,
        "nan": 0, "inf": 0, "poison_left": poison, "aliases_input": aliases,
        "vs_ref32": None, "vs_ref64": None, "ref32_vs_ref64": None,
        "ref_max_abs": max_abs(ref), "ref_shape": list(ref.shape),
    }
    if cand is not None:
        e["nan"], e["inf"] = count_nan_inf(cand)
    if e["shape_ok"] and e["dtype_ok"]:
        e["vs_ref32"] = compare(cand, ref, atol, rtol)
        if ref64 is not None and tuple(ref64.shape) == tuple(ref.shape):
            e["vs_ref64"] = compare(cand, ref64)
    if ref64 is not None and tuple(ref64.shape) == tuple(ref.shape):
        e["ref32_vs_ref64"] = compare(ref, ref64)
    return e


def extra_output_entry(cand: torch.Tensor) -> dict:
    """An output the candidate returned beyond the reference's outputs."""
    nan, inf = count_nan_inf(cand)
    return {"shape": list(cand.shape), "dtype": dtype_name(cand.dtype), "shape_ok": False, "dtype_ok": False,
            "nan": nan, "inf": inf, "poison_left": 0, "aliases_input": False, "vs_ref32": None,
            "vs_ref64": None, "ref32_vs_ref64": None, "ref_max_abs": None, "extra": True}


def add_lowp(entry: dict, lowp, i: int, ref64: Optional[torch.Tensor], precision: str) -> None:
    """Adds `reflowp_vs_ref64`: how far a reference whose matrix operands were
    rounded to the contract's precision (kopt.contract.forward_lowp) is from
    the float64 truth. Nothing under a strict contract."""
    if lowp is None or ref64 is None or i >= len(lowp) or not isinstance(lowp[i], torch.Tensor):
        return
    if tuple(lowp[i].shape) != tuple(ref64.shape):
        return
    entry["reflowp_vs_ref64"] = compare(lowp[i], ref64)
    entry["precision"] = precision
