"""kopt's Python side: the candidate loader (`load_cuda`, `load_so`) and the
evaluation worker (`python3 -m kopt.worker`, see docs/worker-protocol.md).

A compiled candidate implements the C ABI in include/kopt/abi.h. `load_cuda`
builds a .cu source into a cached shared object; `load_so` loads one already
built. Both return a `CudaModule` whose `__call__(inputs, outputs)` passes
torch tensors to `kopt_forward` on the current CUDA stream.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from typing import Iterable, List, Optional, Sequence

__all__ = [
    "CompileError",
    "CandidateError",
    "LoadError",
    "CudaModule",
    "KoptTensor",
    "load_cuda",
    "load_so",
    "find_nvcc",
    "default_arch",
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
# Compilation


def include_dir() -> str:
    env = os.environ.get("KOPT_INCLUDE")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "include"))


def cache_dir() -> str:
    env = os.environ.get("KOPT_CACHE")
    if env:
        return env
    return os.path.join(os.path.expanduser("~"), ".cache", "kopt", "so")


def find_nvcc() -> Optional[str]:
    env = os.environ.get("KOPT_NVCC")
    if env:
        return env
    found = shutil.which("nvcc")
    if found:
        return found
    if os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
        return "/usr/local/cuda/bin/nvcc"
    return None


def default_arch() -> str:
    env = os.environ.get("KOPT_ARCH")
    if env:
        return env
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"sm_{major}{minor}"
    except Exception:
        pass
    return "sm_90"


def _abi_header_text(inc: str) -> bytes:
    try:
        with open(os.path.join(inc, "kopt", "abi.h"), "rb") as f:
            return f.read()
    except OSError:
        return b""


def nvcc_command(nvcc: str, src: str, out: str, arch: str, inc: str,
                 extra_cflags: Iterable[str] = (), extra_ldflags: Iterable[str] = ()) -> list:
    return ([nvcc, "-std=c++17", "-O3", "-Xcompiler", "-fPIC", "-shared", "-lineinfo",
             f"-arch={arch}", f"-I{inc}"] + list(extra_cflags) + [src, "-o", out] + list(extra_ldflags))


# Shared objects load_cuda built or found, in order (kopt profile disassembles them).
LOADED_SO: List[str] = []


def load_cuda(source: str, name: Optional[str] = None, extra_cflags=(), extra_ldflags=()) -> CudaModule:
    """Compiles CUDA source (implementing include/kopt/abi.h) with nvcc into a
    content-hash-named .so under $KOPT_CACHE, reusing it when present, and
    loads it. Raises CompileError with nvcc's stderr on failure."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise CompileError("nvcc not found (set KOPT_NVCC or put nvcc on PATH)")
    arch = default_arch()
    inc = include_dir()
    extra_cflags = [str(x) for x in extra_cflags]
    extra_ldflags = [str(x) for x in extra_ldflags]
    h = hashlib.sha256()
    for part in (source.encode(), nvcc.encode(), arch.encode(), inc.encode(), _abi_header_text(inc),
                 "\0".join(extra_cflags).encode(), "\0".join(extra_ldflags).encode()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    stem = "".join(c if (c.isalnum() or c in "_-") else "_" for c in (name or "kopt"))[:64]
    folder = cache_dir()
    os.makedirs(folder, exist_ok=True)
    final = os.path.join(folder, f"{stem}-{h.hexdigest()[:24]}.so")
    LOADED_SO.append(final)
    if os.path.exists(final):
        return CudaModule(final, cache_hit=True)

    with tempfile.TemporaryDirectory(prefix="kopt-nvcc-") as tmp:
        src = os.path.join(tmp, f"{stem}.cu")
        with open(src, "w") as f:
            f.write(source)
        fd, partial = tempfile.mkstemp(prefix=f".{stem}-", suffix=".so.tmp", dir=folder)
        os.close(fd)
        cmd = nvcc_command(nvcc, src, partial, arch, inc, extra_cflags, extra_ldflags)
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            _unlink(partial)
            raise CompileError(f"cannot run {nvcc}: {e}", "", cmd) from None
        if proc.returncode != 0:
            _unlink(partial)
            stderr = (proc.stderr or "") + (proc.stdout or "")
            raise CompileError(f"nvcc failed ({proc.returncode}):\n{stderr}", stderr, cmd)
        os.replace(partial, final)
    return CudaModule(final, cache_hit=False)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
