"""`capture`: what the reference does (signature, output statistics,
determinism, float64 error, aten op graph with FLOPs, CUDA kernels)."""

from __future__ import annotations

import math
from typing import Any, List, Optional

import torch

from . import checks
from .errors import BadRequest, TaskLoadError
from .inputs import clone_args, dtype_name, make_inputs, nbytes
from .tasks import Reference, abi_inputs, get_reference, signature_entries, tensor_entry

try:  # torch >= 2.1
    from torch.utils import flop_counter as _flop_counter  # type: ignore
    _FLOP_REGISTRY = getattr(_flop_counter, "flop_registry", None)
except Exception:  # pragma: no cover - depends on the torch version
    _flop_counter = None
    _FLOP_REGISTRY = None

try:
    from torch.utils._python_dispatch import TorchDispatchMode
except Exception:  # pragma: no cover
    TorchDispatchMode = None

try:
    from torch.utils._pytree import tree_flatten
except Exception:  # pragma: no cover
    def tree_flatten(x):
        out = []

        def rec(v):
            if isinstance(v, (list, tuple)):
                for i in v:
                    rec(i)
            elif isinstance(v, dict):
                for i in v.values():
                    rec(i)
            else:
                out.append(v)
        rec(x)
        return out, None

# Matrix-class aten ops (by base name, without the overload).
_MATRIX_OPS = {
    "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "_addmm_activation",
    "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "cudnn_convolution", "cudnn_convolution_transpose",
    "mkldnn_convolution", "convolution_overrideable", "_scaled_mm", "einsum", "dot", "mv", "addmv",
    "vdot", "_int_mm", "_cudnn_rnn",
}

# cuDNN's fused RNN op: gates per cell by mode (RNN_RELU, RNN_TANH, LSTM, GRU).
_RNN_GATES = {0: 1, 1: 1, 2: 4, 3: 3}

_POINTWISE = {
    "add", "sub", "mul", "div", "neg", "abs", "relu", "relu_", "sigmoid", "tanh", "exp", "exp2",
    "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "pow", "gelu", "silu", "hardtanh",
    "hardswish", "hardsigmoid", "elu", "selu", "celu", "leaky_relu", "softplus", "mish", "clamp",
    "clamp_min", "clamp_max", "clip", "where", "maximum", "minimum", "sin", "cos", "tan", "erf",
    "erfc", "reciprocal", "sign", "floor", "ceil", "round", "trunc", "frac", "lerp", "addcmul",
    "addcdiv", "threshold", "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or",
    "eq", "ne", "lt", "le", "gt", "ge", "fmod", "remainder", "square", "rsub", "masked_fill",
    "glu", "logit", "xlogy", "hypot", "atan2", "fma", "softshrink", "hardshrink", "tanhshrink",
    "relu6", "prelu", "_prelu_kernel", "rrelu", "logsigmoid", "isnan", "isinf", "nan_to_num",
    "native_dropout", "bernoulli", "sgn", "atan", "asin", "acos", "sinh", "cosh", "asinh", "acosh",
    "atanh", "sigmoid_backward", "threshold_backward", "floor_divide", "true_divide", "heaviside",
}

_REDUCTIONS = {
    "sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "var_mean", "std_mean",
    "norm", "linalg_vector_norm", "logsumexp", "_softmax", "_log_softmax", "softmax", "log_softmax",
    "argmax", "argmin", "cumsum", "cumprod", "native_batch_norm", "_native_batch_norm_legit",
    "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
    "native_layer_norm", "native_group_norm", "batch_norm", "layer_norm", "group_norm",
    "instance_norm", "cudnn_batch_norm", "miopen_batch_norm", "_batch_norm_impl_index",
    "rms_norm", "_fused_rms_norm", "any", "all", "nansum", "nanmean", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "cross_entropy_loss", "nll_loss_forward", "nll_loss2d_forward", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy", "cosine_similarity",
}

# Operators that do no arithmetic, so 0 FLOPs is their rule, not a gap:
# allocation, fills, views and metadata, copies and conversions, and pure
# data movement (concatenation, indexing, padding, reordering). Anything
# else seen without a rule is listed in the reply's `uncounted_ops`.
_ZERO_FLOP = {
    # allocation and fills
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "scalar_tensor",
    "lift_fresh", "lift_fresh_copy", "resize_", "resize_as_", "set_", "fill", "fill_", "zero_",
    "arange", "record_stream",
    # views and metadata
    "alias", "detach", "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "expand",
    "expand_as", "permute", "transpose", "t", "unsqueeze", "squeeze", "flatten", "unflatten", "view_as",
    "narrow", "slice", "select", "split", "split_with_sizes", "chunk", "unbind", "movedim", "diagonal",
    "unfold", "size", "stride", "numel", "dim", "is_contiguous", "sym_size", "sym_stride", "sym_numel",
    "sym_storage_offset", "storage_offset", "_local_scalar_dense", "item", "is_same_size", "is_nonzero",
    "view_as_real", "view_as_complex", "_conj", "conj", "resolve_conj", "resolve_neg",
    # copies and conversions
    "contiguous", "clone", "copy", "copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to",
    "type_as", "_has_compatible_shallow_copy_type",
    # data movement
    "cat", "stack", "hstack", "vstack", "index_select", "gather", "index", "_unsafe_index", "take",
    "masked_select", "embedding", "flip", "roll", "rot90", "repeat", "tile", "repeat_interleave",
    "constant_pad_nd", "pad", "reflection_pad1d", "reflection_pad2d", "replication_pad1d",
    "replication_pad2d", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk", "tril", "triu",
    "one_hot",
}
_ZERO_FLOP_BASES = {b.rstrip("_") for b in _ZERO_FLOP}


def _base_name(func) -> str:
    name = func._schema.name
    if "::" in name:
        name = name.split("::", 1)[1]
    return name


def is_matrix_op(base: str) -> bool:
    b = base.rstrip("_")
    return b in _MATRIX_OPS or "scaled_dot_product" in b or "flash_attention" in b or \
        "efficient_attention" in b or "cudnn_attention" in b


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= int(x)
    return p


def _own_flops(base: str, args, kwargs, outs: List[torch.Tensor]) -> Optional[int]:
    """FLOPs by kopt's own rules; None when no rule applies."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    b = base.rstrip("_") if base not in ("relu_",) else "relu"
    try:
        if b == "mm":
            (m, k), (_, n) = tensors[0].shape, tensors[1].shape
            return 2 * m * n * k
        if b in ("addmm", "_addmm_activation"):
            (m, k), (_, n) = tensors[1].shape, tensors[2].shape
            return 2 * m * n * k
        if b == "bmm":
            (bb, m, k), (_, _, n) = tensors[0].shape, tensors[1].shape
            return 2 * bb * m * n * k
        if b == "baddbmm":
            (bb, m, k), (_, _, n) = tensors[1].shape, tensors[2].shape
            return 2 * bb * m * n * k
        if b in ("convolution", "_convolution", "cudnn_convolution", "mkldnn_convolution",
                 "convolution_overrideable", "cudnn_convolution_transpose"):
            x, w = tensors[0], tensors[1]
            transposed = bool(args[6]) if len(args) > 6 and isinstance(args[6], bool) else \
                bool(kwargs.get("transposed", b == "cudnn_convolution_transpose"))
            if transposed:
                return 2 * _prod(x.shape) * _prod(w.shape[1:])
            return 2 * _prod(outs[0].shape) * _prod(w.shape[1:])
        if "scaled_dot_product" in b or "flash_attention" in b or "efficient_attention" in b or \
                "cudnn_attention" in b:
            q, k, v = tensors[0], tensors[1], tensors[2]
            batch = _prod(q.shape[:-2])
            lq, e = q.shape[-2], q.shape[-1]
            lk, ev = k.shape[-2], v.shape[-1]
            return 2 * batch * lq * lk * e + 2 * batch * lq * lk * ev
        if b == "_cudnn_rnn":
            return _cudnn_rnn_flops(args, kwargs)
        if b in _POINTWISE:
            return sum(o.numel() for o in outs[:1])
        if b in _REDUCTIONS:
            return tensors[0].numel() if tensors else 0
    except Exception:
        return None
    return None


def _cudnn_rnn_flops(args, kwargs) -> Optional[int]:
    """The matrix FLOPs of aten::_cudnn_rnn (what nn.LSTM/GRU/RNN run on a
    GPU): per token, layer and direction, the gate product with the input and
    the recurrent state, plus the projection when there is one. The gates'
    pointwise work is left out (a floor may only undercount).

    Schema: input, weight[], weight_stride0, weight_buf, hx, cx, mode,
    hidden_size, proj_size, num_layers, batch_first, dropout, train,
    bidirectional, batch_sizes, dropout_state."""
    names = ("input", "weight", "weight_stride0", "weight_buf", "hx", "cx", "mode", "hidden_size",
             "proj_size", "num_layers", "batch_first", "dropout", "train", "bidirectional", "batch_sizes")
    a = dict(zip(names, args))
    a.update({k: v for k, v in kwargs.items() if k in names})
    x = a["input"]
    gates = _RNN_GATES.get(int(a["mode"]))
    if gates is None:
        return None
    hidden, proj = int(a["hidden_size"]), int(a.get("proj_size") or 0)
    layers, dirs = int(a["num_layers"]), 2 if a.get("bidirectional") else 1
    out = proj if proj > 0 else hidden
    # Packed input is (tokens, features); else (seq, batch, features) either way round.
    tokens = x.shape[0] if x.dim() == 2 else x.shape[0] * x.shape[1]
    flops = 0
    for layer in range(layers):
        width = x.shape[-1] if layer == 0 else out * dirs
        per_token = 2 * gates * hidden * (width + out) + (2 * hidden * proj if proj > 0 else 0)
        flops += dirs * tokens * per_token
    return int(flops)


def _registry_flops(func, args, kwargs, out) -> Optional[int]:
    if not _FLOP_REGISTRY:
        return None
    f = _FLOP_REGISTRY.get(func) or _FLOP_REGISTRY.get(getattr(func, "_overloadpacket", None))
    if f is None:
        return None
    code = getattr(f, "__code__", None)
    names = code.co_varnames if code is not None else ()
    try:
        if "out_val" in names:
            return int(f(*args, **kwargs, out_val=out))
        return int(f(*args, **kwargs, out=out))
    except Exception:
        return None


def op_flops_or_none(func, args, kwargs, out, outs: List[torch.Tensor]) -> Optional[int]:
    """The op's FLOPs by torch's registry, then kopt's rules (0 for ops that
    do no arithmetic); None when no rule covers it."""
    v = _registry_flops(func, args, kwargs, out)
    if v is None:
        v = _own_flops(_base_name(func), args, kwargs, outs)
    if v is None and _base_name(func).rstrip("_") in _ZERO_FLOP_BASES:
        v = 0
    return v


def op_flops(func, args, kwargs, out, outs: List[torch.Tensor]) -> int:
    return int(op_flops_or_none(func, args, kwargs, out, outs) or 0)


GRAPH_VERSION = 2  # 2: values with their ABI sources, each node's args and dataflow


_SHORT_STR = (torch.dtype, torch.device, torch.layout, torch.memory_format)


def _render_arg(a, vid):
    """An op argument as JSON: a tensor as {"v": id}, containers recursively,
    numbers, bools, strings and None as they are, dtypes, devices, layouts
    and memory formats as their str, a storage as {"storage": bytes} (its
    str prints every element: `set_` on an LSTM's flat weights, one device
    read per element, took minutes), anything else as its type's name."""
    if isinstance(a, torch.Tensor):
        return {"v": vid(a)}
    if isinstance(a, (list, tuple)):
        return [_render_arg(x, vid) for x in a]
    if isinstance(a, dict):
        return {str(k): _render_arg(x, vid) for k, x in a.items()}
    if a is None or isinstance(a, (bool, int, str)):
        return a
    if isinstance(a, float):
        return a if math.isfinite(a) else str(a)
    if isinstance(a, _SHORT_STR):
        return str(a)
    storage_types = tuple(t for t in (getattr(torch, "UntypedStorage", None),
                                      getattr(torch, "TypedStorage", None)) if t is not None)
    if storage_types and isinstance(a, storage_types):
        try:
            return {"storage": int(a.nbytes())}
        except Exception:  # noqa: BLE001
            return {"storage": None}
    return "<" + type(a).__qualname__ + ">"


if TorchDispatchMode is not None:
    class GraphRecorder(TorchDispatchMode):
        """Records each aten op the forward runs: its name, arguments (tensors
        as value ids), input and output value ids, shapes, dtype and FLOPs.
        A value is one tensor object; the ABI inputs are registered first so
        the graph says which value is which input, parameter or buffer."""

        def __init__(self):
            super().__init__()
            self.nodes: List[dict] = []
            self.uncounted: dict = {}  # op name -> calls, for ops no FLOP rule covers
            self.values: List[dict] = []
            self._ids: dict = {}  # id(tensor) -> value id
            self._keep: List[torch.Tensor] = []  # keeps ids unique while recording

        def value(self, t: torch.Tensor, source: Optional[dict] = None) -> int:
            k = id(t)
            if k not in self._ids:
                self._ids[k] = len(self.values)
                self._keep.append(t)
                self.values.append({"shape": list(t.shape), "dtype": dtype_name(t.dtype),
                                    "source": source or {"kind": "const"}})
            return self._ids[k]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            try:
                ins = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
                outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
                base = _base_name(func)
                rule = op_flops_or_none(func, args, kwargs, out, outs)
                if rule is None:
                    name = func._schema.name
                    self.uncounted[name] = self.uncounted.get(name, 0) + 1
                flops = int(rule or 0)
                first = outs[0] if outs else (ins[0] if ins else None)
                node_index = len(self.nodes)
                in_ids = [self.value(t) for t in ins]
                # Arguments before outputs: an in-place op's output is a new value.
                rendered_args = _render_arg(list(args), self.value)
                rendered_kwargs = _render_arg(kwargs, self.value)
                out_ids = []
                for j, o in enumerate(outs):
                    if id(o) in self._ids:  # in place, or a returned input: a new value
                        del self._ids[id(o)]
                    out_ids.append(self.value(o, {"kind": "op", "node": node_index, "output": j}))
                self.nodes.append({
                    "op": func._schema.name,
                    "in_shapes": [list(t.shape) for t in ins],
                    "out_shapes": [list(t.shape) for t in outs],
                    "dtype": dtype_name(first.dtype) if first is not None else None,
                    "flops": flops,
                    "class": "matrix" if is_matrix_op(base) else "other",
                    "args": rendered_args,
                    "kwargs": rendered_kwargs,
                    "in": in_ids,
                    "out": out_ids,
                })
            except Exception:
                pass
            return out
else:  # pragma: no cover
    GraphRecorder = None


def record_graph(ref: Reference, args: List[Any], seed: int) -> dict:
    """The forward's aten op graph (GRAPH_VERSION): nodes in execution order,
    values with where each comes from (an ABI input by index, an op's output,
    or a constant), and the values the forward returns."""
    if GraphRecorder is None:
        return {"nodes": [], "flops": 0, "flops_by_class": {"matrix": 0, "other": 0},
                "error": "TorchDispatchMode unavailable", "uncounted_ops": None}
    rec = GraphRecorder()
    ref.restore()
    from .inputs import seed_all
    from .tasks import flatten_outputs

    abi = 0
    for a in args:
        if isinstance(a, torch.Tensor):
            rec.value(a, {"kind": "abi", "index": abi, "role": "input"})
        abi += 1  # a scalar argument is a 0-d ABI tensor; ops see the number
    for role, state in (("param", ref.params), ("buffer", ref.buffers)):
        for name, t in state:
            rec.value(t, {"kind": "abi", "index": abi, "role": role, "name": name})
            abi += 1
    seed_all(seed)
    with torch.no_grad():
        with rec:
            result = ref.model(*args)
    outputs = [rec.value(o) for o in flatten_outputs(result) if isinstance(o, torch.Tensor)]
    matrix = sum(n["flops"] for n in rec.nodes if n["class"] == "matrix")
    other = sum(n["flops"] for n in rec.nodes if n["class"] != "matrix")
    return {"version": GRAPH_VERSION, "nodes": rec.nodes, "values": rec.values,
            "outputs": outputs, "flops": matrix + other,
            "flops_by_class": {"matrix": matrix, "other": other},
            "uncounted_ops": sorted(rec.uncounted)}


def run_graph(req: dict, device) -> dict:
    """`graph`: the task's op graph recorded on PyTorch's meta device: shapes
    and dataflow without running any arithmetic, so no GPU (and no time) is
    needed. For planning where nothing can be measured (kopt optimize
    without a GPU)."""
    meta = torch.device("meta")
    try:
        task, ref = get_reference(req.get("task"), meta, int(req.get("init_seed", 42)))
        args = make_inputs(task, 0, meta)
        graph = record_graph(ref, args, 0)
    except TaskLoadError:
        raise
    except Exception as e:  # an op meta tensors cannot run
        raise TaskLoadError(f"recording the op graph on the meta device failed: {type(e).__name__}: {e}", e) from e
    graph.pop("uncounted_ops", None)
    return {"graph": graph}


def profile_kernels(ref: Reference, args: List[Any], seed: int, device, calls: int = 3) -> list:
    if not device.is_cuda:
        return []
    from torch.profiler import ProfilerActivity, profile

    ref.forward(args, seed)  # warm-up
    device.sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            ref.forward(args, seed)
        device.sync()
    agg: dict = {}
    order: list = []
    cuda_type = getattr(torch.autograd, "DeviceType", None)
    for evt in prof.events():
        dt = getattr(evt, "device_type", None)
        is_dev = False
        if cuda_type is not None and dt is not None:
            is_dev = dt == cuda_type.CUDA
        if not is_dev:
            continue
        us = None
        tr = getattr(evt, "time_range", None)
        if tr is not None:
            us = tr.elapsed_us()
        if us is None:
            us = getattr(evt, "device_time", None) or getattr(evt, "cuda_time", 0)
        if evt.name not in agg:
            agg[evt.name] = [0, 0.0]
            order.append(evt.name)
        agg[evt.name][0] += 1
        agg[evt.name][1] += float(us)
    return [{"name": n, "calls": agg[n][0] / calls, "device_ms": agg[n][1] / 1000.0 / calls} for n in order]


def run_capture(req: dict, device) -> dict:
    seeds = req.get("seeds", [0, 1, 2])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise BadRequest("`seeds` must be a non-empty list of integers")
    init_seed = int(req.get("init_seed", 42))
    task, ref = get_reference(req.get("task"), device.torch_device, init_seed)
    dev = device.torch_device

    first_args = None
    first_outs = None
    outputs_stats = []
    seed_outs = []
    for i, seed in enumerate(seeds):
        args = make_inputs(task, seed, dev)
        try:
            outs = ref.forward(clone_args(args), seed)
        except Exception as e:
            raise TaskLoadError(f"Model forward failed: {type(e).__name__}: {e}", e) from e
        for o in outs:
            if not isinstance(o, torch.Tensor):
                raise TaskLoadError(f"Model forward returned a {type(o).__name__}, not a tensor")
        outputs_stats.append([checks.value_stats(o) for o in outs])
        if i == 0:
            first_args, first_outs = args, outs
        elif i == 1:
            seed_outs = outs
        else:
            del outs
        del args

    try:
        inputs_sig = signature_entries(ref, first_args)
    except TypeError as e:
        raise TaskLoadError(str(e), e) from e
    n_forward = len(first_args)
    signature = {
        "inputs": inputs_sig,
        "outputs": [tensor_entry(f"out{i}", "output", o) for i, o in enumerate(first_outs)],
        "n_forward_inputs": n_forward,
        "training": bool(ref.model.training),
        "module_types": _module_types(ref.model),
    }

    seed_rel = [checks.rel_diff(a, b) for a, b in zip(first_outs, seed_outs)] if len(seeds) > 1 else None
    s0 = seeds[0]
    other_rng = [checks.rel_diff(a, b) for a, b in
                 zip(first_outs, ref.forward(clone_args(first_args), s0 + 1000003))]
    same_rng = [checks.rel_diff(a, b) for a, b in zip(first_outs, ref.forward(clone_args(first_args), s0))]

    ref_error = None
    ref64_failure = None
    if req.get("fp64", True):
        ref_error = _ref_error(ref, task, seeds, dev, first_args, first_outs)
        if ref_error is None:
            ref64_failure = ref.model64_error or "float64 evaluation failed"

    distributions = _distribution_facts(ref, task, s0, dev)
    graph = record_graph(ref, clone_args(first_args), s0)
    abi = abi_inputs(ref, first_args, ref.state_tensors())
    min_bytes = sum(nbytes(t) for t in abi) + sum(nbytes(o) for o in first_outs)
    kernels = profile_kernels(ref, first_args, s0, device) if req.get("profile", True) else []

    reply = {
        "signature": signature,
        "outputs_stats": outputs_stats,
        "seed_rel_diff": seed_rel,
        "repeat_rel_diff": other_rng,
        "repeat_same_seed_rel_diff": same_rng,
        "ref_error": ref_error,
        "graph": graph,
        # Ops seen with no FLOP rule (counted as 0, so the floor may be low);
        # None when the graph could not be recorded.
        "uncounted_ops": graph.pop("uncounted_ops", None),
        "min_bytes": min_bytes,
        "kernels": kernels,
        "distributions": distributions,
    }
    if ref64_failure:
        reply["ref64_failure"] = ref64_failure
    return reply


def _distribution_facts(ref: Reference, task, seed: int, dev) -> dict:
    """For each input distribution besides the task's own (kopt.inputs):
    whether it changes any input (a task with no floating-point inputs has
    nothing to transform) and whether the reference stays finite there (where
    it does not, the task is not defined on it and candidates are not checked
    on it)."""
    from .inputs import DISTRIBUTIONS, describe_distribution

    facts = {}
    for name in DISTRIBUTIONS:
        if name == "task":
            continue
        entry = {"about": describe_distribution(name)}
        try:
            args = make_inputs(task, seed, dev, name)
            entry["changes_inputs"] = any(isinstance(a, torch.Tensor) and a.is_floating_point() and a.numel() > 0
                                          for a in args)
            outs = ref.forward(clone_args(args), seed)
            stats = [checks.value_stats(o) for o in outs if isinstance(o, torch.Tensor)]
            entry["finite"] = all(st["nan"] == 0 and st["inf"] == 0 for st in stats)
            entry["outputs_stats"] = stats
            del args, outs
        except Exception as e:  # noqa: BLE001  (the reference rejects such inputs: not defined there)
            entry["finite"] = False
            entry["error"] = f"{type(e).__name__}: {e}"[:300]
        facts[name] = entry
    return facts


def _module_types(model: torch.nn.Module) -> List[str]:
    seen = []
    for m in model.modules():
        if m is model:
            continue
        n = type(m).__name__
        if n not in seen:
            seen.append(n)
    return seen


def _ref_error(ref: Reference, task, seeds, dev, first_args, first_outs) -> Optional[list]:
    """Per output, the worst over seeds of fp32 reference vs float64."""
    worst: Optional[list] = None
    for i, seed in enumerate(seeds):
        if i == 0:
            args, outs = first_args, first_outs
        else:
            args = make_inputs(task, seed, dev)
            outs = ref.forward(clone_args(args), seed)
        outs64 = ref.forward64(clone_args(args), seed)
        if outs64 is None or len(outs64) != len(outs):
            return None
        cur = []
        for o, o64 in zip(outs, outs64):
            if not isinstance(o64, torch.Tensor) or tuple(o64.shape) != tuple(o.shape):
                return None
            c = checks.compare(o, o64)
            cur.append({"max_abs": c["max_abs"], "rel_l2": c["rel_l2"],
                        "ref64_max_abs": checks.max_abs(o64)})
        if worst is None:
            worst = cur
        else:
            for w, c in zip(worst, cur):
                for k in w:
                    w[k] = _nanmax(w[k], c[k])
    return worst


def _nanmax(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)
