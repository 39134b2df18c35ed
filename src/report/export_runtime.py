# ---------------------------------------------------------------------------
# kopt export runtime (written by `kopt export`; kopt itself is not needed).
#
# Compiles CUDA source written against kopt/abi.h with nvcc, using the recipe
# kopt verified the kernel with (_KOPT_RECIPE), caches the shared object under
# a hash of everything that goes into it, and calls `kopt_forward` through
# ctypes on torch's current CUDA stream. `_kopt_runtime` is a module object
# with the same names as kopt's own loader (`load_cuda`, `load_so`,
# `CompileError`, ...), so code written for `kopt.load_cuda` runs unchanged.
#
# Environment:
#   KOPT_NVCC            nvcc to use (else PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)
#   KOPT_EXPORT_CACHE    cache folder (else $XDG_CACHE_HOME/kopt-export or ~/.cache/kopt-export)
#   KOPT_EXPORT_ARCH     compile for this sm_XX instead of the verified arch (not verified by kopt)


def _kopt_make_runtime(recipe, arch, abi_header):
    import ctypes
    import hashlib
    import os
    import re
    import shutil
    import subprocess
    import tempfile
    import types

    rt = types.ModuleType("kopt")
    rt.__doc__ = "The loader embedded by `kopt export` (same names as kopt's own)."
    rt.RECIPE = list(recipe)
    rt.ARCH = arch
    rt.KOPT_MAX_DIMS = 8
    rt.NVCC_TIMEOUT_S = 600
    # Kernels take CUDA tensors. Tests set this False to drive a host-memory
    # stand-in for the kernel through the same code on a machine without a GPU.
    rt.require_cuda = True

    class KoptExportError(RuntimeError):
        """Base of the errors the embedded loader raises."""

    class CompileError(KoptExportError):
        """nvcc is missing or failed; `log` holds its output."""

        def __init__(self, message, log="", command=None):
            super().__init__(message)
            self.log = log
            self.stderr = log
            self.command = command

    class LoadError(KoptExportError):
        """A shared object could not be loaded, lacks kopt_forward, or does not fit this GPU."""

    class CandidateError(KoptExportError):
        """kopt_forward or kopt_init returned a non-zero code."""

        def __init__(self, message, code=0):
            super().__init__(message)
            self.code = code

    class KoptTensor(ctypes.Structure):
        """Mirror of kopt_tensor in kopt/abi.h."""

        _fields_ = [
            ("data", ctypes.c_void_p),
            ("dtype", ctypes.c_int32),
            ("ndim", ctypes.c_int32),
            ("shape", ctypes.c_int64 * 8),
            ("strides", ctypes.c_int64 * 8),
        ]

    codes = {}

    def dtype_code(dtype):
        if not codes:
            import torch

            codes.update({torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.float64: 3,
                          torch.int32: 4, torch.int64: 5, torch.bool: 6, torch.uint8: 7, torch.int8: 8,
                          torch.int16: 9})
        try:
            return codes[dtype]
        except KeyError:
            raise TypeError(f"dtype {dtype} has no kopt_dtype code") from None

    zeros = (0,) * 8

    def fill_tensor(slot, t):
        """Describes CUDA tensor `t` in the kopt_tensor `slot`."""
        if rt.require_cuda and not t.is_cuda:
            raise KoptExportError(f"the kernel needs CUDA tensors but got one on {t.device}: move the model "
                                  "and its inputs to a GPU (model.cuda()).")
        n = t.dim()
        if n > 8:
            raise ValueError(f"tensor has {n} dims; the kopt ABI allows 8")
        slot.data = t.data_ptr() or None
        slot.dtype = dtype_code(t.dtype)
        slot.ndim = n
        slot.shape[:] = tuple(t.shape) + zeros[n:]
        slot.strides[:] = t.stride() + zeros[n:]

    def tensor_array(tensors):
        arr = (KoptTensor * max(len(tensors), 1))()
        for i, t in enumerate(tensors):
            fill_tensor(arr[i], t)
        return arr

    def stream_of(tensors):
        """torch's current stream on the first CUDA tensor's device (else the current device)."""
        import torch

        for t in tensors:
            if t.is_cuda:
                return ctypes.c_void_p(torch.cuda.current_stream(t.device).cuda_stream)
        if not rt.require_cuda:
            return ctypes.c_void_p(None)
        return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    cuda_errors = {1: "cudaErrorInvalidValue", 2: "cudaErrorMemoryAllocation",
                   9: "cudaErrorInvalidConfiguration", 98: "cudaErrorInvalidDeviceFunction",
                   200: "cudaErrorInvalidKernelImage", 209: "cudaErrorNoKernelImageForDevice",
                   700: "cudaErrorIllegalAddress", 701: "cudaErrorLaunchOutOfResources",
                   719: "cudaErrorLaunchFailure"}

    def raise_for_code(fn, rc):
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()  # a sticky CUDA error surfaces here, as torch's own
        hint = cuda_errors.get(rc)
        raise CandidateError(f"{fn} returned {rc}" + (f" (as a cudaError_t: {hint})" if hint else ""), rc)

    class CudaModule:
        """A loaded kernel: `module(inputs, outputs)` calls kopt_forward on the
        current CUDA stream (kopt_init first, once, when the .so exports it)."""

        def __init__(self, path):
            self.path = os.path.abspath(path)
            mode = getattr(os, "RTLD_NOW", 2) | getattr(os, "RTLD_LOCAL", 0)
            try:
                self._lib = ctypes.CDLL(self.path, mode=mode)
            except OSError as e:
                raise LoadError(f"cannot load {self.path}: {e}") from None
            try:
                self._forward = self._lib.kopt_forward
            except AttributeError:
                raise LoadError(f"{self.path} does not export kopt_forward") from None
            self._forward.restype = ctypes.c_int
            self._forward.argtypes = [ctypes.POINTER(KoptTensor), ctypes.c_int, ctypes.POINTER(KoptTensor),
                                      ctypes.c_int, ctypes.c_void_p]
            self._init = getattr(self._lib, "kopt_init", None)
            if self._init is not None:
                self._init.restype = ctypes.c_int
                self._init.argtypes = [ctypes.POINTER(KoptTensor), ctypes.c_int, ctypes.c_void_p]
            self._initialized = False
            self.init_key = None  # what ModelNew last ran kopt_init on

        @property
        def has_init(self):
            return self._init is not None

        def init(self, inputs, in_arr=None, stream=None):
            """Calls kopt_init once (no-op when absent or already called)."""
            if self._initialized:
                return
            self._initialized = True
            self.run_init(inputs, in_arr, stream)

        def run_init(self, inputs, in_arr=None, stream=None):
            """Calls kopt_init now (when exported), whether or not it ran before."""
            if self._init is None:
                return
            if in_arr is None:
                in_arr = tensor_array(inputs)
            rc = self._init(in_arr, len(inputs), stream if stream is not None else stream_of(inputs))
            if rc != 0:
                raise_for_code("kopt_init", rc)

        def call_arrays(self, in_arr, n_in, out_arr, n_out, stream):
            """Raw call on filled KoptTensor arrays; returns kopt_forward's code."""
            return self._forward(in_arr, n_in, out_arr, n_out, stream)

        def __call__(self, inputs, outputs):
            in_arr = tensor_array(inputs)
            out_arr = tensor_array(outputs)
            stream = stream_of(list(inputs) + list(outputs))
            if not self._initialized:
                self.init(inputs, in_arr, stream)
            rc = self._forward(in_arr, len(inputs), out_arr, len(outputs), stream)
            if rc != 0:
                raise_for_code("kopt_forward", rc)

    def find_nvcc():
        env = os.environ.get("KOPT_NVCC")
        if env:
            return env
        found = shutil.which("nvcc")
        if found:
            return found
        for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
                return os.path.join(home, "bin", "nvcc")
        return None

    def cache_dir():
        env = os.environ.get("KOPT_EXPORT_CACHE")
        if env:
            return env
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "kopt-export")

    def gencode(sm):
        m = re.fullmatch(r"sm_(\d+[a-z]?)", sm)
        if m is None:
            raise ValueError(f"{sm!r} is not an SM architecture such as sm_90")
        return f"-gencode=arch=compute_{m.group(1)},code=sm_{m.group(1)}"

    def target_arch():
        """The arch to compile for: the verified one, unless KOPT_EXPORT_ARCH says otherwise."""
        return os.environ.get("KOPT_EXPORT_ARCH") or arch

    def recipe_for(sm):
        """The verified recipe, retargeted to `sm` when it differs from the verified arch."""
        if sm == arch:
            return list(recipe)
        old, new = gencode(arch), gencode(sm)
        return [new if f == old else f for f in recipe]

    def runs_on(sm, major, minor):
        """True when code built for `sm` runs on a device of compute capability major.minor:
        same major and at least the minor, exactly that device for sm_XXa."""
        m = re.fullmatch(r"sm_(\d+)(\d)([a-z]?)", sm)
        if m is None:
            return True
        want_major, want_minor, suffix = int(m.group(1)), int(m.group(2)), m.group(3)
        if suffix == "a":
            return (major, minor) == (want_major, want_minor)
        return major == want_major and minor >= want_minor

    versions = {}

    def nvcc_version(nvcc):
        if nvcc not in versions:
            try:
                p = subprocess.run([nvcc, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, timeout=120)
            except (OSError, subprocess.SubprocessError) as e:
                raise CompileError(f"cannot run {nvcc} --version: {e}") from None
            if p.returncode != 0:
                raise CompileError(f"{nvcc} --version failed ({p.returncode}): {p.stdout.strip()}", p.stdout)
            versions[nvcc] = p.stdout
        return versions[nvcc]

    def build(source, name=None, extra_cflags=(), extra_ldflags=()):
        """Compiles `source` with the recipe (or finds it in the cache); returns the .so path.
        Raises CompileError when nvcc is missing or fails (the message holds its output)."""
        label = name or "kernel"
        nvcc = find_nvcc()
        if nvcc is None:
            raise CompileError(f"nvcc not found, so {label} cannot be compiled: install the CUDA toolkit or "
                               "set KOPT_NVCC (or CUDA_HOME) to it.")
        flags = recipe_for(target_arch())
        extra_cflags = [str(x) for x in extra_cflags]
        extra_ldflags = [str(x) for x in extra_ldflags]
        h = hashlib.sha256()
        for part in (source, abi_header, "\0".join(flags), "\0".join(extra_cflags), "\0".join(extra_ldflags),
                     os.path.realpath(nvcc), nvcc_version(nvcc)):
            data = part.encode()
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
        key = h.hexdigest()[:32]
        # The cache folder, else (a read-only home, a sandbox) one in the temp
        # folder; KOPT_EXPORT_CACHE, when set, is the only one tried.
        roots = [cache_dir()]
        if not os.environ.get("KOPT_EXPORT_CACHE"):
            uid = os.getuid() if hasattr(os, "getuid") else 0
            roots.append(os.path.join(tempfile.gettempdir(), f"kopt-export-{uid}"))
        tmp, errors = None, []
        for root in roots:
            entry = os.path.join(root, key)
            so = os.path.join(entry, "candidate.so")
            if os.path.isfile(so):
                return so
            try:
                os.makedirs(root, exist_ok=True)
                tmp = tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=root)
                break
            except OSError as e:
                errors.append(f"{root}: {e}")
        if tmp is None:
            raise CompileError(f"cannot write the kernel cache ({'; '.join(errors)}); set KOPT_EXPORT_CACHE "
                               "to a writable folder.") from None
        try:
            os.makedirs(os.path.join(tmp, "kopt"))
            with open(os.path.join(tmp, "kopt", "abi.h"), "w") as f:
                f.write(abi_header)
            with open(os.path.join(tmp, "candidate.cu"), "w") as f:
                f.write(source)
            cmd = ([nvcc] + flags + ["-I" + tmp] + extra_cflags + ["-o", "candidate.so", "candidate.cu"] +
                   extra_ldflags)
            try:
                p = subprocess.run(cmd, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   timeout=rt.NVCC_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise CompileError(f"nvcc ran past {rt.NVCC_TIMEOUT_S} s compiling {label}", "", cmd) from None
            except OSError as e:
                raise CompileError(f"cannot run {nvcc}: {e}", "", cmd) from None
            if p.returncode != 0 or not os.path.isfile(os.path.join(tmp, "candidate.so")):
                raise CompileError(f"nvcc failed (exit {p.returncode}) compiling {label}:\n{p.stdout}", p.stdout,
                                   cmd)
            with open(os.path.join(tmp, "build.txt"), "w") as f:
                f.write(" ".join(cmd) + "\n\n" + p.stdout)
            try:
                os.rename(tmp, entry)
            except OSError:
                if not os.path.isfile(so):  # not another process winning the race
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return so

    def check_device(sm, label):
        try:
            import torch

            if not torch.cuda.is_available():
                return
            major, minor = torch.cuda.get_device_capability()
        except Exception:
            return
        if not runs_on(sm, major, minor):
            raise LoadError(f"{label} is compiled for {sm} but this GPU is sm_{major}{minor}: set "
                            f"KOPT_EXPORT_ARCH=sm_{major}{minor} to compile it for this GPU (kopt verified "
                            f"it on {arch} only).")

    def load_so(path):
        """Loads an already-built shared object."""
        return CudaModule(path)

    def load_cuda(source, name=None, extra_cflags=(), extra_ldflags=()):
        """Compiles (or finds in the cache) and loads CUDA source written against kopt/abi.h."""
        path = build(source, name, extra_cflags, extra_ldflags)
        check_device(target_arch(), name or "the kernel")
        return CudaModule(path)

    for obj in (KoptExportError, CompileError, LoadError, CandidateError, KoptTensor, CudaModule, dtype_code,
                fill_tensor, tensor_array, stream_of, raise_for_code, find_nvcc, cache_dir, target_arch, recipe_for, runs_on,
                build, load_so, load_cuda):
        setattr(rt, obj.__name__, obj)
    return rt


_kopt_runtime = _kopt_make_runtime(_KOPT_RECIPE, _KOPT_ARCH, _KOPT_ABI_H)
