"""kopt's Python side: the candidate loader (`load_cuda`, `load_so`) and the
evaluation worker (`python3 -m kopt.worker`, see docs/worker-protocol.md).

A compiled candidate implements the C ABI in include/kopt/abi.h. `load_cuda`
builds a .cu source into a cached shared object through kopt's own Builder
(`kopt build`); `load_so` loads one already built. Both return a `CudaModule` whose `__call__(inputs, outputs)` passes
torch tensors to `kopt_forward` on the current CUDA stream.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import tempfile
import threading
from typing import List, Optional, Sequence

__all__ = [
    "CompileError",
    "CandidateError",
    "LoadError",
    "CudaModule",
    "KoptTensor",
    "load_cuda",
    "load_so",
    "kopt_binary",
    "include_dir",
    "cache_dir",
    "KOPT_MAX_DIMS",
    "DTYPE_CODES",
]

KOPT_MAX_DIMS = 8


class CompileError(RuntimeError):
    """nvcc failed; the message holds its stderr."""

    def __init__(self, message: str, stderr: str = "", command: Optional[list] = None):
        super().__init__(message)
        self.stderr = stderr
        self.command = command


class LoadError(RuntimeError):
    """A shared object could not be loaded or lacks `kopt_forward`."""


class CandidateError(RuntimeError):
    """`kopt_forward` or `kopt_init` returned a non-zero code."""

    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        self.code = code


class KoptTensor(ctypes.Structure):
    """Mirror of `kopt_tensor` in include/kopt/abi.h."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_int64 * KOPT_MAX_DIMS),
        ("strides", ctypes.c_int64 * KOPT_MAX_DIMS),
    ]


def _dtype_codes():
    import torch

    return {
        torch.float32: 0,
        torch.float16: 1,
        torch.bfloat16: 2,
        torch.float64: 3,
        torch.int32: 4,
        torch.int64: 5,
        torch.bool: 6,
        torch.uint8: 7,
        torch.int8: 8,
        torch.int16: 9,
    }


DTYPE_CODES = None  # filled lazily: {torch.dtype: kopt_dtype code}


def dtype_code(dtype) -> int:
    global DTYPE_CODES
    if DTYPE_CODES is None:
        DTYPE_CODES = _dtype_codes()
    try:
        return DTYPE_CODES[dtype]
    except KeyError:
        raise TypeError(f"dtype {dtype} has no kopt_dtype code") from None


def fill_kopt_tensor(slot: KoptTensor, t) -> None:
    if t.dim() > KOPT_MAX_DIMS:
        raise ValueError(f"tensor has {t.dim()} dims; the ABI allows {KOPT_MAX_DIMS}")
    slot.data = t.data_ptr() or None
    slot.dtype = dtype_code(t.dtype)
    slot.ndim = t.dim()
    shape, strides = t.shape, t.stride()
    for i in range(KOPT_MAX_DIMS):
        if i < len(shape):
            slot.shape[i] = shape[i]
            slot.strides[i] = strides[i]
        else:
            slot.shape[i] = 0
            slot.strides[i] = 0


def make_tensor_array(tensors: Sequence) -> "ctypes.Array[KoptTensor]":
    arr = (KoptTensor * max(len(tensors), 1))()
    for i, t in enumerate(tensors):
        fill_kopt_tensor(arr[i], t)
    return arr


def _current_stream_handle():
    import torch

    if torch.cuda.is_available():
        return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    return ctypes.c_void_p(None)


class CudaModule:
    """A loaded candidate shared object.

    `module(inputs, outputs)` calls `kopt_forward` with the tensors (inputs in
    ABI order; outputs preallocated by the caller) on the current CUDA stream.
    `kopt_init`, when exported, is called once, before the first forward, with
    the same inputs.
    """

    def __init__(self, path: str, cache_hit: Optional[bool] = None):
        self.path = os.path.abspath(path)
        self.cache_hit = cache_hit
        try:
            self._lib = ctypes.CDLL(self.path, mode=getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_LOCAL", 0))
        except OSError as e:
            raise LoadError(f"cannot load {self.path}: {e}") from None
        try:
            self._forward = self._lib.kopt_forward
        except AttributeError:
            raise LoadError(f"{self.path} does not export kopt_forward") from None
        self._forward.restype = ctypes.c_int
        self._forward.argtypes = [
            ctypes.POINTER(KoptTensor), ctypes.c_int,
            ctypes.POINTER(KoptTensor), ctypes.c_int, ctypes.c_void_p,
        ]
        self._init = getattr(self._lib, "kopt_init", None)
        if self._init is not None:
            self._init.restype = ctypes.c_int
            self._init.argtypes = [ctypes.POINTER(KoptTensor), ctypes.c_int, ctypes.c_void_p]
        self._initialized = False
        self._lock = threading.Lock()
        # Built by `--arch host` against kopt/host_cuda.h: its kernels run on the CPU.
        self.host_emulated = hasattr(self._lib, "kopt_host_emulation")

    @property
    def has_init(self) -> bool:
        return self._init is not None

    def init(self, inputs: Sequence, in_arr=None, stream=None) -> None:
        """Calls `kopt_init` once (no-op when absent or already called)."""
        with self._lock:
            if self._initialized:
                return
            self._initialized = True
            if self._init is None:
                return
            if in_arr is None:
                in_arr = make_tensor_array(inputs)
            if stream is None:
                stream = _current_stream_handle()
            rc = self._init(in_arr, len(inputs), stream)
            if rc != 0:
                raise_for_code("kopt_init", rc)

    def call_arrays(self, in_arr, n_in: int, out_arr, n_out: int, stream) -> int:
        """Raw call on prebuilt KoptTensor arrays; returns kopt_forward's code."""
        return self._forward(in_arr, n_in, out_arr, n_out, stream)

    def __call__(self, inputs: Sequence, outputs: Sequence) -> None:
        in_arr = make_tensor_array(inputs)
        out_arr = make_tensor_array(outputs)
        stream = _current_stream_handle()
        if not self._initialized:
            self.init(inputs, in_arr, stream)
        rc = self._forward(in_arr, len(inputs), out_arr, len(outputs), stream)
        if rc != 0:
            raise_for_code("kopt_forward", rc)


_CUDA_ERROR_NAMES = {
    1: "cudaErrorInvalidValue", 2: "cudaErrorMemoryAllocation", 9: "cudaErrorInvalidConfiguration",
    98: "cudaErrorInvalidDeviceFunction", 200: "cudaErrorInvalidKernelImage",
    209: "cudaErrorNoKernelImageForDevice", 400: "cudaErrorInvalidResourceHandle",
    700: "cudaErrorIllegalAddress", 701: "cudaErrorLaunchOutOfResources", 702: "cudaErrorLaunchTimeout",
    710: "cudaErrorAssert", 715: "cudaErrorIllegalInstruction", 716: "cudaErrorMisalignedAddress",
    719: "cudaErrorLaunchFailure",
}


def raise_for_code(fn: str, rc: int) -> None:
    """Raises for a non-zero return code. A sticky CUDA error (the context is
    broken) surfaces first, from torch.cuda.synchronize(), as torch's own
    "CUDA error: ..." RuntimeError; otherwise CandidateError."""
    try:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
    except ImportError:
        pass
    hint = _CUDA_ERROR_NAMES.get(rc)
    msg = f"{fn} returned {rc}" + (f" (as a cudaError_t: {hint})" if hint else "")
    raise CandidateError(msg, rc)


def load_so(path: str) -> CudaModule:
    """Loads an already-built candidate shared object."""
    return CudaModule(path)


# ----------------------------------------------------------------------------
# Compilation: kopt's own Builder (`kopt build`), so a hybrid's kernels are
# compiled with the nvcc recipe and the cache of cuda candidates. The recipe
# lives only in C++ (src/build/nvcc_builder.cc).


def include_dir() -> str:
    env = os.environ.get("KOPT_INCLUDE")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "include"))


def cache_dir() -> str:
    """The cache folder of this process (KOPT_CACHE); `kopt build` keeps
    load_cuda's builds in its builds/ folder."""
    env = os.environ.get("KOPT_CACHE")
    if env:
        return env
    return os.path.join(os.path.expanduser("~"), ".cache", "kopt", "so")


def kopt_binary() -> Optional[str]:
    """The kopt executable load_cuda asks to build (KOPT_BIN; kopt's workers
    get it), or None."""
    return os.environ.get("KOPT_BIN") or None


# Shared objects load_cuda built or found, in order (kopt profile disassembles them).
LOADED_SO: List[str] = []


def load_cuda(source: str, name: Optional[str] = None, extra_cflags=(), extra_ldflags=()) -> CudaModule:
    """Compiles CUDA source (implementing include/kopt/abi.h) with kopt's
    Builder (`$KOPT_BIN build --json`: the nvcc recipe and content-hash cache
    of cuda candidates, in the builds/ folder of kopt's cache, $KOPT_CACHE)
    and loads the shared object.
    Extra flags go to nvcc and are part of the cache key. Raises CompileError
    with nvcc's output when the source does not compile."""
    binary = kopt_binary()
    if binary is None:
        raise CompileError("kopt.load_cuda builds through the kopt executable and none is known: run the candidate "
                           "under kopt (kopt eval, bench or profile), or set KOPT_BIN to the kopt binary "
                           "(e.g. build/kopt).")
    stem = "".join(c if (c.isalnum() or c in "_-") else "_" for c in (name or "kopt"))[:64]
    flags = [str(x) for x in extra_cflags] + [str(x) for x in extra_ldflags]
    with tempfile.TemporaryDirectory(prefix="kopt-cu-") as tmp:
        src = os.path.join(tmp, f"{stem}.cu")
        with open(src, "w") as f:
            f.write(source)
        cmd = [binary, "build", src, "--json", "--name", stem]  # its cache: $KOPT_CACHE, as here
        cmd += [f"--nvcc-flag={x}" for x in flags]
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            raise CompileError(f"cannot run {binary}: {e}", "", cmd) from None
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        stderr = (proc.stderr or "") + (proc.stdout or "")
        raise CompileError(f"kopt build failed ({proc.returncode}): {stderr.strip()}", stderr, cmd) from None
    if not result.get("ok") or not result.get("so_path"):
        log = result.get("log", "")
        raise CompileError(f"nvcc failed:\n{log}", log, cmd)
    path = result["so_path"]
    LOADED_SO.append(path)
    return CudaModule(path, cache_hit=bool(result.get("cache_hit")))
