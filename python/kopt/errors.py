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


SANDBOX_VIOLATION = "sandbox_violation"


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
    if violation_message(e) is not None:
        return SANDBOX_VIOLATION, False
    if isinstance(e, WorkerError):
        return e.kind, False
    return "internal", False


def _who(e: BaseException) -> str:
    if isinstance(e, TaskLoadError):
        return "the task"
    if isinstance(e, (CandidateLoadError, CandidateRunError)):
        return "the candidate"
    return "the code under evaluation"


def violation_message(e: BaseException) -> Optional[str]:
    """A plain sentence when `e` is the sandbox refusing a write outside the
    scratch directory or a network connection (docs/verification.md,
    "Sandbox"); None otherwise, and always None without a sandbox."""
    try:
        from . import sandbox
    except Exception:  # noqa: BLE001
        return None
    if not sandbox.active():
        return None
    inner = e.cause if isinstance(e, WorkerError) and e.cause is not None else e
    try:
        return sandbox.describe_violation(inner, _who(e))
    except Exception:  # noqa: BLE001
        return None
