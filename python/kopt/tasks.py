"""Task and candidate loading; the ABI input list; forward calls."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import itertools
import os
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import torch

from . import CandidateError, CudaModule, LoadError, load_so, make_tensor_array, raise_for_code
from . import flags as global_flags
from .errors import BadRequest, CandidateLoadError, CandidateRunError, TaskLoadError
from .inputs import dtype_name, flatten_outputs, seed_all

DEFAULT_INIT_SEED = 42

_counter = itertools.count()
_task_cache: Dict[Tuple[str, int, int], Any] = {}


def _load_module(path: str, prefix: str):
    name = f"_kopt_{prefix}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_task(path: str):
    """Imports a KernelBench-style task file as a fresh module, cached by
    (path, mtime, size)."""
    if not isinstance(path, str) or not path:
        raise BadRequest("request needs a `task` path")
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as e:
        raise TaskLoadError(f"cannot read task {path}: {e}", e) from e
    key = (real, st.st_mtime_ns, st.st_size)
    if key in _task_cache:
        return _task_cache[key]
    try:
        module = _load_module(real, "task")
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt,)):
            raise
        raise TaskLoadError(f"task {path} failed to import: {type(e).__name__}: {e}", e) from e
    missing = [n for n in ("Model", "get_inputs") if not hasattr(module, n)]
    if missing:
        raise TaskLoadError(f"{path} is not a task: it lacks {', '.join(missing)}")
    # Keep only the latest version of each path.
    for k in [k for k in _task_cache if k[0] == real]:
        del _task_cache[k]
    _task_cache[key] = module
    return module


def init_inputs(task_module) -> List[Any]:
    fn = getattr(task_module, "get_init_inputs", None)
    if fn is None:
        return []
    v = fn()
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v]


def forward_arg_names(model: torch.nn.Module, n: int) -> List[str]:
    names: List[str] = []
    try:
        sig = inspect.signature(model.forward)
        for p in sig.parameters.values():
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                names.append(p.name)
            elif p.kind == p.VAR_POSITIONAL:
                break
    except (TypeError, ValueError):
        pass
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def scalar_tensor(v: Any, device: torch.device) -> torch.Tensor:
    if isinstance(v, bool):
        return torch.tensor(v, dtype=torch.bool, device=device)
    if isinstance(v, int):
        return torch.tensor(v, dtype=torch.int64, device=device)
    if isinstance(v, float):
        return torch.tensor(v, dtype=torch.float64, device=device)
    raise TypeError(f"forward argument of type {type(v).__name__} is neither a tensor nor an int/float/bool")


def call_model(model, args: List[Any], seed: Optional[int]) -> List[Any]:
    if seed is not None:
        seed_all(seed)
    with torch.no_grad():
        out = model(*args)
    return flatten_outputs(out)


class Reference:
    """The task's Model on the device, with a snapshot of its initial state so
    every forward starts from the same parameters and buffers."""

    def __init__(self, task_module, device: torch.device, init_seed: int):
        self.task = task_module
        self.device = device
        self.init_seed = init_seed
        try:
            seed_all(init_seed)
            args = init_inputs(task_module)
            model = task_module.Model(*args)
            model = model.to(device)
        except Exception as e:
            raise TaskLoadError(f"constructing Model failed: {type(e).__name__}: {e}", e) from e
        self.model = model
        self.params = [(n, p) for n, p in model.named_parameters()]
        self.buffers = [(n, b) for n, b in model.named_buffers()]
        with torch.no_grad():
            self.snapshot = {n: t.detach().clone() for n, t in self.params + self.buffers}
        self._model64 = None
        self.model64_error: Optional[str] = None

    def restore(self) -> None:
        with torch.no_grad():
            for n, t in self.params + self.buffers:
                s = self.snapshot[n]
                if t.shape == s.shape and t.dtype == s.dtype:
                    t.copy_(s)

    def forward(self, args: List[Any], seed: Optional[int]) -> List[Any]:
        self.restore()
        global_flags.restore()
        return call_model(self.model, args, seed)

    def state_tensors(self) -> List[Tuple[str, str, torch.Tensor]]:
        """(name, role, tensor) for params then buffers (snapshot values)."""
        return ([(n, "param", self.snapshot[n]) for n, _ in self.params] +
                [(n, "buffer", self.snapshot[n]) for n, _ in self.buffers])

    def state_dict_snapshot(self) -> Dict[str, torch.Tensor]:
        sd = self.model.state_dict()
        return {k: self.snapshot.get(k, v) for k, v in sd.items()}

    def model64(self):
        """A float64 deep copy of the Model (None when it cannot be made)."""
        if self._model64 is None and self.model64_error is None:
            try:
                self.restore()
                self._model64 = copy.deepcopy(self.model).double()
            except Exception as e:
                self.model64_error = f"{type(e).__name__}: {e}"
        return self._model64

    def forward64(self, args: List[Any], seed: Optional[int]) -> Optional[List[Any]]:
        m = self.model64()
        if m is None:
            return None
        global_flags.restore()
        args64 = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else
                  (float(a) if isinstance(a, float) else a) for a in args]
        try:
            out = call_model(m, args64, seed)
        except Exception as e:
            self.model64_error = f"{type(e).__name__}: {e}"
            self._model64 = None
            return None
        return out


_ref_cache: Dict[tuple, Reference] = {}


def get_reference(task_path: str, device: torch.device, init_seed: int):
    module = load_task(task_path)
    key = (id(module), str(device), init_seed)
    ref = _ref_cache.get(key)
    if ref is None:
        _ref_cache.clear()
        ref = Reference(module, device, init_seed)
        _ref_cache[key] = ref
    return module, ref


def drop_references() -> None:
    _ref_cache.clear()


def abi_inputs(ref: Reference, args: List[Any], state: List[Tuple[str, str, torch.Tensor]]):
    """ABI input tensors: forward tensors (scalars as 0-d tensors), then params, then buffers."""
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a)
        else:
            out.append(scalar_tensor(a, ref.device))
    out.extend(t for _, _, t in state)
    return out


def signature_entries(ref: Reference, args: List[Any]) -> List[dict]:
    names = forward_arg_names(ref.model, len(args))
    entries = []
    for name, a in zip(names, args):
        if isinstance(a, torch.Tensor):
            entries.append(tensor_entry(name, "input", a))
        else:
            t = scalar_tensor(a, ref.device)
            entries.append(tensor_entry(name, "scalar", t))
    for name, role, t in ref.state_tensors():
        entries.append(tensor_entry(name, role, t))
    return entries


def tensor_entry(name: str, role: str, t: torch.Tensor) -> dict:
    return {"name": name, "role": role, "shape": list(t.shape), "dtype": dtype_name(t.dtype),
            "strides": list(t.stride())}


# ----------------------------------------------------------------------------
# Candidates

_POISON_BITS = {
    torch.float32: (torch.int32, 0x7FC0DEAD),
    torch.float64: (torch.int64, 0x7FF8DEADBEEFDEAD),
    torch.float16: (torch.int16, 0x7E6D),
    torch.bfloat16: (torch.int16, 0x7FAD),
}


def poison_like(shape, dtype, device) -> torch.Tensor:
    """A contiguous tensor filled with the poison pattern of its dtype: a
    quiet NaN with a distinctive payload for floats, the dtype's minimum for
    signed integers, 255 for uint8, the byte 0xFF for bool."""
    t = torch.empty(shape, dtype=dtype, device=device)
    if dtype in _POISON_BITS:
        view_dtype, bits = _POISON_BITS[dtype]
        t.view(view_dtype).fill_(bits)
    elif dtype == torch.bool:
        t.view(torch.uint8).fill_(0xFF)
    elif dtype == torch.uint8:
        t.fill_(255)
    elif not dtype.is_floating_point and not dtype.is_complex:
        t.fill_(torch.iinfo(dtype).min)
    else:
        t.fill_(float("nan"))
    return t


def poison_left(t: torch.Tensor) -> int:
    """How many elements still hold the poison pattern."""
    if t.numel() == 0:
        return 0
    ref = poison_like((), t.dtype, t.device)
    if t.dtype in _POISON_BITS:
        view_dtype, _ = _POISON_BITS[t.dtype]
        return int((t.contiguous().view(view_dtype) == ref.view(view_dtype)).sum().item())
    if t.dtype == torch.bool:
        return int((t.contiguous().view(torch.uint8) == 0xFF).sum().item())
    return int((t == ref).sum().item())


class HybridCandidate:
    kind = "hybrid"

    def __init__(self, path: str, ref: Reference, module=None):
        """Imports the file (or reuses `module`, already imported: a second
        ModelNew for another shape) and builds ModelNew for `ref`."""
        if not isinstance(path, str) or not path:
            raise BadRequest("hybrid candidate needs `path`")
        try:
            self.module = module if module is not None else _load_module(os.path.realpath(path), "cand")
        except (Exception, SystemExit) as e:
            raise CandidateLoadError(f"candidate {path} failed to import: {type(e).__name__}: {e}", e) from e
        if not hasattr(self.module, "ModelNew"):
            raise CandidateLoadError(f"candidate {path} defines no ModelNew")
        try:
            seed_all(ref.init_seed)
            m = self.module.ModelNew(*init_inputs(ref.task))
            m = m.to(ref.device)
        except (Exception, SystemExit) as e:
            raise CandidateLoadError(f"constructing ModelNew failed: {type(e).__name__}: {e}", e) from e
        self.model = m
        self.ref = ref
        self.weights_copied = False
        ref_sd = ref.state_dict_snapshot()
        new_sd = m.state_dict()
        if (list(ref_sd.keys()) == list(new_sd.keys()) or set(ref_sd) == set(new_sd)) and all(
                tuple(ref_sd[k].shape) == tuple(new_sd[k].shape) for k in ref_sd):
            try:
                m.load_state_dict({k: v.clone() for k, v in ref_sd.items()})
                self.weights_copied = True
            except Exception as e:
                raise CandidateLoadError(f"loading Model's state_dict into ModelNew failed: {e}", e) from e

    def restore_state(self) -> None:
        """Model's starting state back into ModelNew's tensors of the same
        names (what the reference's forward starts from), when they mirror
        Model's; state the forward writes then compares call by call."""
        if not self.weights_copied:
            return
        with torch.no_grad():
            sd = self.model.state_dict(keep_vars=True)
            for n, t in self.ref.snapshot.items():
                x = sd.get(n)
                if x is not None and x.shape == t.shape and x.dtype == t.dtype:
                    x.copy_(t)

    def state_now(self):
        """ModelNew's tensors by Model's names, or None when they do not mirror Model's."""
        if not self.weights_copied:
            return None
        return {n: t.detach() for n, t in self.model.state_dict(keep_vars=True).items()}

    def run(self, args: List[Any], seed: Optional[int]) -> List[Any]:
        try:
            outs = call_model(self.model, args, seed)
        except (Exception, SystemExit) as e:
            raise CandidateRunError(f"candidate raised {type(e).__name__}: {e}", e) from e
        for o in outs:
            if not isinstance(o, torch.Tensor):
                raise CandidateRunError(f"candidate forward returned a {type(o).__name__}, not a tensor")
        return outs

    def timed_fn(self, args: List[Any]):
        model = self.model

        def fn():
            with torch.no_grad():
                return model(*args)

        return fn


class CudaCandidate:
    kind = "cuda"

    def __init__(self, so_path: str, ref: Reference, device):
        if not isinstance(so_path, str) or not so_path:
            raise BadRequest("cuda candidate needs `so`")
        try:
            self.mod: CudaModule = load_so(so_path)
        except LoadError as e:
            raise CandidateLoadError(str(e), e) from e
        # A build for the host (`--arch host`, include/kopt/host_cuda.h) runs
        # its kernels on the CPU: only the CPU worker takes it, to verify.
        if self.mod.host_emulated != (not device.is_cuda):
            raise CandidateLoadError(
                "cuda candidates need a CUDA device (worker runs on cpu): build with --arch host to "
                "verify one on the CPU" if not device.is_cuda else
                "this candidate was built for the host (--arch host): it cannot run on a GPU")
        self.ref = ref
        self.device = device
        # One private copy of params/buffers for the whole request: kopt_init
        # may keep state derived from them.
        self.state = [(n, r, t.clone()) for n, r, t in ref.state_tensors()]
        self.weights_copied = True
        self.out_specs: Optional[List[Tuple[tuple, torch.dtype]]] = None

    def set_output_specs(self, outs: List[torch.Tensor]) -> None:
        self.out_specs = [(tuple(o.shape), o.dtype) for o in outs]

    def restore_state(self) -> None:
        """The private parameters and buffers back to the reference's
        starting values, in place (kopt_init may hold their pointers)."""
        with torch.no_grad():
            for n, _, t in self.state:
                t.copy_(self.ref.snapshot[n])

    def state_now(self):
        return {n: t for n, _, t in self.state}

    def run(self, args: List[Any], seed: Optional[int]) -> List[torch.Tensor]:
        assert self.out_specs is not None
        if seed is not None:
            seed_all(seed)
        ins = abi_inputs(self.ref, args, self.state)
        outs = [poison_like(s, d, self.ref.device) for s, d in self.out_specs]
        try:
            self.mod(ins, outs)
        except CandidateError as e:
            raise CandidateRunError(f"candidate {e}", e) from e
        except (TypeError, ValueError) as e:
            raise CandidateRunError(f"cannot pass tensors to the candidate: {e}", e) from e
        return outs

    def timed_fn(self, args: List[Any]):
        """allocate outputs + kopt_forward, with prebuilt input arrays."""
        assert self.out_specs is not None
        ins = abi_inputs(self.ref, args, self.state)
        in_arr = make_tensor_array(ins)
        specs = self.out_specs
        dev = self.ref.device
        templ = [torch.empty(s, dtype=d, device=dev) for s, d in specs]
        out_arr = make_tensor_array(templ)
        del templ
        n_in, n_out = len(ins), len(specs)
        mod = self.mod
        import ctypes

        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream if dev.type == "cuda" else None)
        mod.init(ins, in_arr, stream)
        fn_keep = ins  # the arrays point into these tensors

        def fn():
            outs = [torch.empty(s, dtype=d, device=dev) for s, d in specs]
            for i, o in enumerate(outs):
                out_arr[i].data = o.data_ptr() or None
            rc = mod.call_arrays(in_arr, n_in, out_arr, n_out, stream)
            if rc != 0:
                try:
                    raise_for_code("kopt_forward", rc)
                except CandidateError as e:
                    raise CandidateRunError(f"candidate {e}", e) from e
            return outs

        fn.keep = fn_keep
        return fn


def load_candidate(spec: Any, ref: Reference, device):
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise BadRequest("`candidate` must be an object")
    kind = spec.get("kind")
    if kind == "hybrid":
        return HybridCandidate(spec.get("path"), ref)
    if kind == "cuda":
        return CudaCandidate(spec.get("so"), ref, device)
    raise BadRequest(f"unknown candidate kind {kind!r}")
