"""Global torch settings a task or candidate might change (TF32, cuDNN
autotuning, default dtype). The worker snapshots them at start-up and puts
them back before every reference forward and after every request, so one
candidate cannot change how the reference or later requests run."""

from __future__ import annotations

from typing import Any, Callable, List, Tuple

import torch


def _knobs() -> List[Tuple[str, Callable[[], Any], Callable[[Any], None]]]:
    knobs = []

    def attr(name, obj, field):
        knobs.append((name, lambda: getattr(obj, field), lambda v: setattr(obj, field, v)))

    attr("matmul.allow_tf32", torch.backends.cuda.matmul, "allow_tf32")
    # Knobs this torch lacks fail in snapshot() (some raise AssertionError,
    # not AttributeError) and are skipped.
    attr("matmul.fp16_reduced", torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction")
    attr("matmul.bf16_reduced", torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction")
    attr("cudnn.allow_tf32", torch.backends.cudnn, "allow_tf32")
    attr("cudnn.benchmark", torch.backends.cudnn, "benchmark")
    attr("cudnn.deterministic", torch.backends.cudnn, "deterministic")
    knobs.append(("default_dtype", torch.get_default_dtype, torch.set_default_dtype))
    return knobs


_saved: List[Tuple[Callable[[], Any], Callable[[Any], None], Any]] = []


def snapshot() -> None:
    _saved.clear()
    for _, get, set_ in _knobs():
        try:
            _saved.append((get, set_, get()))
        except Exception:
            pass


def restore() -> None:
    for get, set_, value in _saved:
        try:
            if get() != value:
                set_(value)
        except Exception:
            pass
