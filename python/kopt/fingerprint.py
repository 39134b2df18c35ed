"""Fingerprints of tensors, so two processes can show they computed the same
reference on the same inputs without shipping the tensors.

The verdict (src/run/verdict.cc) compares the fingerprints of the reference
the candidate's process computed with those of a clean process where no
candidate code ever ran: a candidate that changed the reference (its classes,
the torch functions it calls, the inputs it is given) changes its
fingerprints. A fingerprint is a tensor's shape, dtype, NaN and Inf counts,
sums of its finite values (plain, absolute, squared, in float64) and its
values at SAMPLES positions drawn from `key`, which the caller chooses per
session."""

from __future__ import annotations

from typing import Any, List

import torch

from .inputs import dtype_name

SAMPLES = 32


def fingerprint(t: Any, key: int) -> dict:
    if not isinstance(t, torch.Tensor):
        return {"type": type(t).__name__}
    x = t.detach().reshape(-1)
    n = x.numel()
    fp = {"shape": list(t.shape), "dtype": dtype_name(t.dtype), "numel": n, "nan": 0, "inf": 0,
          "sum": 0.0, "abs_sum": 0.0, "sq_sum": 0.0, "samples": []}
    if n == 0:
        return fp
    if t.is_complex():
        x = torch.view_as_real(t.detach()).reshape(-1)
    x64 = x.to(torch.float64)
    finite = torch.isfinite(x64)
    if not bool(finite.all().item()):
        fp["nan"] = int(torch.isnan(x64).sum().item())
        fp["inf"] = int(torch.isinf(x64).sum().item())
        x64 = torch.where(finite, x64, torch.zeros_like(x64))
    fp["sum"] = float(x64.sum().item())
    fp["abs_sum"] = float(x64.abs().sum().item())
    fp["sq_sum"] = float(x64.square().sum().item())
    gen = torch.Generator()
    gen.manual_seed(int(key) & 0x7FFFFFFFFFFFFFFF)
    idx = torch.randint(0, x.numel(), (min(SAMPLES, x.numel()),), generator=gen)
    fp["samples"] = [float(v) for v in x.to(torch.float64)[idx.to(x.device)].tolist()]
    return fp


def fingerprints(ts: List[Any], key: int) -> List[dict]:
    return [fingerprint(t, key + i) for i, t in enumerate(ts)]
