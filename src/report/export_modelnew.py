# ---------------------------------------------------------------------------
# ModelNew: the task's Model above (same constructor, the same parameters
# created in the same order, so a seeded construction gives the same weights)
# with forward() replaced by the kernel in _KOPT_CUDA_SOURCE, called through
# the kopt ABI: inputs are forward()'s tensors (Python scalars as 0-d tensors:
# int64, float64, bool), then named_parameters(), then named_buffers();
# outputs are allocated here, contiguous, with the shapes and dtypes
# Model.forward would return. Those come from running Model.forward on the
# "meta" device (no data, no compute), once per input signature; when that
# fails, from one real Model.forward call (random state and buffers restored).
# Set KOPT_EXPORT_SHAPES=reference to always use the real call.

import contextlib as _kopt_contextlib
import os as _kopt_os

import torch as _kopt_torch

_kopt_kernel = None  # the loaded kernel, shared by every ModelNew in the process
_kopt_reference_mode = set()  # ids of ModelNew objects whose forward runs Model.forward


def kopt_build():
    """Compiles the kernel with the embedded recipe (or finds it in the cache) and
    returns the shared object's path. ModelNew does this at its first forward;
    call it to fail early. Needs nvcc, not a GPU."""
    return _kopt_runtime.build(_KOPT_CUDA_SOURCE, _KOPT_NAME)


def _kopt_load():
    global _kopt_kernel
    if _kopt_kernel is None:
        _kopt_kernel = _kopt_runtime.load_cuda(_KOPT_CUDA_SOURCE, _KOPT_NAME)
    return _kopt_kernel


class _KoptState:
    """Per-ModelNew caches: output specs by input signature, scalar tensors,
    and the kopt_tensor arrays of the last call (refilled only where they change)."""

    def __init__(self):
        self.specs = {}
        self.scalars = {}
        self.how = {}  # signature -> "meta" or "reference", for tests and curiosity
        self.in_arr = None
        self.in_key = None  # the weights' (data_ptr, version) and the input count in_arr describes
        self.out_arrs = {}  # signature -> kopt_tensor array of that signature's outputs

    def __deepcopy__(self, memo):  # caches describe this object's tensors only
        return _KoptState()

    def __reduce__(self):
        return (_KoptState, ())


def _kopt_state(model):
    state = model.__dict__.get("_kopt_state")
    if state is None:
        state = _KoptState()
        model.__dict__["_kopt_state"] = state
    return state


def _kopt_signature(model, args):
    key = [model.training]
    for a in args:
        if isinstance(a, _kopt_torch.Tensor):
            key.append((tuple(a.shape), a.dtype, a.device.type))
        elif isinstance(a, (bool, int, float)):
            key.append((type(a), a))
        else:
            raise TypeError(f"forward argument of type {type(a).__name__} is neither a tensor nor an "
                            "int/float/bool, so the kopt ABI cannot pass it")
    return tuple(key)


def _kopt_flatten(out, leaves):
    """A tensor or (nested) tuple/list of tensors -> template; tensors appended to `leaves`."""
    if isinstance(out, _kopt_torch.Tensor):
        leaves.append(out)
        return None
    if isinstance(out, (tuple, list)):
        return (list if isinstance(out, list) else tuple, [_kopt_flatten(o, leaves) for o in out])
    raise TypeError(f"Model.forward returned a {type(out).__name__}; the kopt ABI returns only tensors")


def _kopt_unflatten(template, leaves):
    if template is None:
        return next(leaves)
    kind, parts = template
    return kind(_kopt_unflatten(p, leaves) for p in parts)


def _kopt_reference_call(model, args):
    _kopt_reference_mode.add(id(model))
    try:
        with _kopt_torch.no_grad():
            return model(*args)
    finally:
        _kopt_reference_mode.discard(id(model))


def _kopt_outputs_on_meta(model, args):
    func = getattr(_kopt_torch, "func", None)  # torch >= 2.0; before, torch.nn.utils.stateless
    if func is not None and hasattr(func, "functional_call"):
        functional_call = func.functional_call
    else:
        from torch.nn.utils.stateless import functional_call

    def meta(t):
        return _kopt_torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="meta")

    state = {n: meta(p) for n, p in model.named_parameters()}
    state.update({n: meta(b) for n, b in model.named_buffers()})
    meta_args = tuple(meta(a) if isinstance(a, _kopt_torch.Tensor) else a for a in args)
    _kopt_reference_mode.add(id(model))
    try:
        with _kopt_torch.no_grad():
            return functional_call(model, state, meta_args)
    finally:
        _kopt_reference_mode.discard(id(model))


def _kopt_outputs_by_reference(model, args):
    saved = [(b, b.detach().clone()) for b in model.buffers()]
    devices = sorted({a.device.index or 0 for a in args if isinstance(a, _kopt_torch.Tensor) and a.is_cuda})
    try:
        with _kopt_torch.random.fork_rng(devices=devices):
            return _kopt_reference_call(model, args)
    finally:
        with _kopt_torch.no_grad():
            for b, copy in saved:
                if not _kopt_torch.equal(b, copy):
                    b.copy_(copy)


def _kopt_storage(t):
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return storage.data_ptr()


def _kopt_poison_answers(outputs, inputs):
    """Overwrites the reference's outputs before they are freed, so the caching
    allocator can never hand the answer to the kernel's fresh output buffers
    (an element the kernel fails to write must not pass as correct). Outputs
    sharing memory with an input, parameter or buffer are left alone."""
    shared = {_kopt_storage(t) for t in inputs if isinstance(t, _kopt_torch.Tensor)}
    with _kopt_torch.no_grad():
        for o in outputs:
            if o.numel() == 0 or _kopt_storage(o) in shared:
                continue
            if o.is_floating_point() or o.is_complex():
                o.fill_(float("nan"))
            elif o.dtype == _kopt_torch.bool:
                o.fill_(True)
            else:
                o.fill_(_kopt_torch.iinfo(o.dtype).min)


def _kopt_specs(model, args):
    state = _kopt_state(model)
    key = _kopt_signature(model, args)
    if key not in state.specs:
        out, how = None, "meta"
        if _kopt_os.environ.get("KOPT_EXPORT_SHAPES") != "reference":
            try:
                out = _kopt_outputs_on_meta(model, args)
            except Exception:
                out = None
        if out is None:
            out, how = _kopt_outputs_by_reference(model, args), "reference"
        leaves = []
        template = _kopt_flatten(out, leaves)
        state.specs[key] = ([(tuple(o.shape), o.dtype) for o in leaves], template)
        state.how[key] = how
        if how == "reference":
            _kopt_poison_answers(leaves, list(args) + list(model.parameters()) + list(model.buffers()))
    return key, state.specs[key]


def kopt_output_specs(model, *args):
    """[(shape, dtype)] of Model.forward's outputs for these inputs, the output
    structure, and how they were found ("meta" or "reference"); cached."""
    key, (specs, template) = _kopt_specs(model, args)
    return specs, template, _kopt_state(model).how[key]


def kopt_abi_inputs(model, *args):
    """The tensors kopt_forward receives, in the ABI's order: forward tensors
    (scalars as 0-d tensors on the model's device), parameters, buffers."""
    state = _kopt_state(model)
    weights = list(model.parameters()) + list(model.buffers())
    device = next((a.device for a in args if isinstance(a, _kopt_torch.Tensor)), None)
    if device is None:
        device = weights[0].device if weights else _kopt_torch.device("cuda")
    ins = []
    for a in args:
        if isinstance(a, _kopt_torch.Tensor):
            ins.append(a)
            continue
        key = (type(a), a, device)
        t = state.scalars.get(key)
        if t is None:
            dtype = {bool: _kopt_torch.bool, int: _kopt_torch.int64, float: _kopt_torch.float64}.get(type(a))
            if dtype is None:
                raise TypeError(f"forward argument of type {type(a).__name__} is neither a tensor nor an "
                                "int/float/bool, so the kopt ABI cannot pass it")
            t = _kopt_torch.tensor(a, dtype=dtype, device=device)
            if len(state.scalars) < 256:
                state.scalars[key] = t
        ins.append(t)
    return ins + weights, device


def _kopt_forward(model, args):
    cuda = _kopt_runtime.require_cuda
    if cuda and not _kopt_torch.cuda.is_available():
        raise _kopt_runtime.KoptExportError(f"{_KOPT_NAME} runs a CUDA kernel, but torch sees no CUDA device.")
    kernel = _kopt_load()
    key, (specs, template) = _kopt_specs(model, args)
    ins, device = kopt_abi_inputs(model, *args)
    if cuda and device.type != "cuda":
        raise _kopt_runtime.KoptExportError(f"{_KOPT_NAME} runs a CUDA kernel but its inputs are on {device}: "
                                            "move the model and its inputs to a GPU (model.cuda()).")
    state = _kopt_state(model)
    n_args = len(args)
    weights_key = (len(ins), tuple((t.data_ptr(), t._version) for t in ins[n_args:]))
    with _kopt_torch.cuda.device(device) if device.type == "cuda" else _kopt_contextlib.nullcontext():
        stream = _kopt_runtime.stream_of(ins[:1])
        if state.in_key != weights_key:
            state.in_arr = _kopt_runtime.tensor_array(ins)
            state.in_key = weights_key
        else:
            for i in range(n_args):
                _kopt_runtime.fill_tensor(state.in_arr[i], ins[i])
        in_arr = state.in_arr
        if kernel.has_init and kernel.init_key != (id(model), weights_key):
            # kopt_init may keep state derived from the parameters: run it again when
            # they change, or when another ModelNew uses the kernel.
            kernel.run_init(ins, in_arr, stream)
            kernel.init_key = (id(model), weights_key)
        outs = [_kopt_torch.empty(s, dtype=d, device=device) for s, d in specs]
        out_arr = state.out_arrs.get(key)
        if out_arr is None:  # shapes and dtypes are fixed per signature: only pointers change
            out_arr = state.out_arrs[key] = _kopt_runtime.tensor_array(outs)
        else:
            for slot, o in zip(out_arr, outs):
                slot.data = o.data_ptr() or None
        rc = kernel.call_arrays(in_arr, len(ins), out_arr, len(outs), stream)
        if rc != 0:
            _kopt_runtime.raise_for_code("kopt_forward", rc)
    return _kopt_unflatten(template, iter(outs))


class ModelNew(Model):
    """Model with forward() computed by the CUDA kernel kopt verified."""

    def forward(self, *args, **kwargs):
        if kwargs:
            import inspect

            bound = inspect.signature(super().forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args = tuple(bound.arguments.values())
        if id(self) in _kopt_reference_mode:
            return super().forward(*args)
        return _kopt_forward(self, args)


if __name__ == "__main__":
    print("kernel:", kopt_build())
    if _kopt_torch.cuda.is_available():
        _kopt_torch.manual_seed(42)
        _kopt_init = get_init_inputs()
        _kopt_ref = Model(*_kopt_init).cuda()
        _kopt_torch.manual_seed(42)
        _kopt_new = ModelNew(*_kopt_init).cuda()
        _kopt_args = [a.cuda() if isinstance(a, _kopt_torch.Tensor) else a for a in get_inputs()]
        with _kopt_torch.no_grad():
            _kopt_a = _kopt_ref(*_kopt_args)
            _kopt_b = _kopt_new(*_kopt_args)
        _kopt_a = [_kopt_a] if isinstance(_kopt_a, _kopt_torch.Tensor) else list(_kopt_a)
        _kopt_b = [_kopt_b] if isinstance(_kopt_b, _kopt_torch.Tensor) else list(_kopt_b)
        for _i, (_x, _y) in enumerate(zip(_kopt_a, _kopt_b)):
            print(f"output {_i}: max |ModelNew - Model| = {(_x.double() - _y.double()).abs().max().item():.3g}")
