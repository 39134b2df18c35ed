"""Error kinds of the worker protocol and the mapping from exceptions."""

from __future__ import annotations

from typing import Optional, Tuple


class WorkerError(Exception):
    """An error with a protocol kind; `cause` is the original exception."""

    kind = "internal"

    def __init__(self, message: str, cause: Optional[BaseException] = None):
        super().__init__(message)
        self.cause = cause


class BadRequest(WorkerError):
    kind = "bad_request"


class TaskLoadError(WorkerError):
    kind = "task_load"


class CandidateLoadError(WorkerError):
    kind = "candidate_load"


class CandidateRunError(WorkerError):
    kind = "candidate_error"


_CUDA_MARKERS = (
    "cuda error",
    "illegal memory access",
    "an illegal instruction",
    "unspecified launch failure",
    "device-side assert",
    "misaligned address",
    "cudaerrorillegaladdress",
    "cuda_error_",
    "accelerator error",
)


def _is_oom(e: BaseException) -> bool:
    try:
        import torch

        oom_type = getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None)
        if oom_type is not None and isinstance(e, oom_type):
            return True
    except Exception:
        pass
    if isinstance(e, MemoryError):
        return True
    return isinstance(e, RuntimeError) and "out of memory" in str(e).lower()


def _is_cuda_error(e: BaseException) -> bool:
    name = type(e).__name__
    if name == "AcceleratorError":
        return True
    if not isinstance(e, (RuntimeError,)) and name not in ("AcceleratorError",):
        # Some wrappers (e.g. torch.compile) re-raise as other types; look at
        # the message anyway.
        pass
    text = str(e).lower()
    return any(m in text for m in _CUDA_MARKERS)


def classify(e: BaseException) -> Tuple[str, bool]:
    """(kind, fatal) for an exception raised while serving a request."""
    inner = e.cause if isinstance(e, WorkerError) and e.cause is not None else e
    # Walk the cause chain: a candidate's own wrapper may hide the CUDA error.
    seen = set()
    probe: Optional[BaseException] = inner
    while probe is not None and id(probe) not in seen:
        seen.add(id(probe))
        if _is_oom(probe):
            return "oom", False
        if _is_cuda_error(probe):
            return "cuda_error", True
        probe = probe.__cause__ or probe.__context__
    if isinstance(e, WorkerError):
        return e.kind, False
    return "internal", False
