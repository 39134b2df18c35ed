"""`evaluate` and `time`: run a candidate against the reference."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import torch

from . import checks, contract
from .errors import BadRequest, CandidateLoadError, CandidateRunError, TaskLoadError
from .fingerprint import fingerprints
from .inputs import DISTRIBUTIONS, bitwise_equal, clone_args, make_inputs, nbytes, overlaps
from .integrity import ORIG, Ledger, exact_tensor, plain
from .tasks import (CudaCandidate, HybridCandidate, Reference, forward_arg_names, get_reference, load_candidate,
                    poison_left)
from .timing import parse_timing, run_timing

SHAPE_PROBE_SEED_OFFSET = 7919


def _tolerances(req: dict):
    tol = req.get("kernelbench_tol") or {}
    if not isinstance(tol, dict):
        raise BadRequest("`kernelbench_tol` must be an object")
    return float(tol.get("atol", 1e-2)), float(tol.get("rtol", 1e-2))


def _distributions(req: dict) -> List[str]:
    d = req.get("distributions") or []
    if not isinstance(d, list) or not all(isinstance(x, str) and x in DISTRIBUTIONS for x in d):
        raise BadRequest(f"`distributions` must be a list of {', '.join(DISTRIBUTIONS)}")
    return [x for x in d if x != "task"]


def fp_key(base: int, seed: int, distribution: str) -> int:
    """The fingerprint sample key of one check: the same on both sides."""
    return int(base) * 1000003 + int(seed) * 101 + DISTRIBUTIONS.index(distribution or "task")


def _ref_forward(ref, pristine, seed, recorder=None):
    args = clone_args(pristine)
    try:
        if recorder is None:
            return ref.forward(args, seed)
        with recorder:
            return ref.forward(args, seed)
    except Exception as e:
        raise TaskLoadError(f"Model forward failed: {type(e).__name__}: {e}", e) from e


def run_evaluate(req: dict, device) -> dict:
    seeds = req.get("seeds", [11, 12, 13])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise BadRequest("`seeds` must be a non-empty list of integers")
    if not isinstance(req.get("candidate"), dict):
        raise BadRequest("`candidate` must be an object")
    atol, rtol = _tolerances(req)
    timing_cfg = parse_timing(req["timing"]) if req.get("timing") else None
    terms = contract.parse(req.get("contract"))
    init_seed = int(req.get("init_seed", 42))
    task, ref = get_reference(req.get("task"), device.torch_device, init_seed)

    ledger = Ledger()
    t0 = ORIG.perf_counter()
    cand = load_candidate(req["candidate"], ref, device)
    device.sync()
    load_ms = (ORIG.perf_counter() - t0) * 1e3
    ledger.check()

    want64 = bool(req.get("fp64", True))
    # Torch operators are recorded for hybrids only: a cuda candidate's .so
    # cannot reach torch's dispatcher.
    record = terms["record_ops"] and not isinstance(cand, CudaCandidate)
    ops = {"candidate": {}, "reference": {}, "candidate_forwards": 0} if record else None
    if record and contract.OpRecorder is None:
        ops["error"] = "this torch has no TorchDispatchMode"
        record = False
    run = _Run(task, ref, cand, device, ledger, atol, rtol, want64, terms["precision"], ops if record else None)
    run.fp_base = int(req.get("fp_key", 0))
    if isinstance(cand, CudaCandidate):
        run.set_output_specs(seeds[0])
    check_list = [run.check(seed, rerun=seed == seeds[0]) for seed in seeds]
    # The contract's other input distributions, one check each on the first
    # seed: a kernel right only on get_inputs()'s own distribution fails here.
    for dist in _distributions(req):
        try:
            check_list.append(run.check(seeds[0], rerun=False, distribution=dist))
        except BaseException as e:  # noqa: BLE001  (re-raised; the worker names where)
            if not hasattr(e, "kopt_where"):
                e.kopt_where = f"on {dist} inputs"
            raise

    if terms["second_shape"]:
        check_list.append(_second_shape(req, terms, seeds[0], device, ledger, atol, rtol, want64, cand,
                                        ops if record else None))

    reply: dict = {"checks": check_list, "load_ms": load_ms, "tampered": ledger.names,
                   "weights_copied": bool(getattr(cand, "weights_copied", False))}
    if ops is not None:
        reply["torch_ops"] = ops
    if want64 and ref.model64_error:
        reply["ref64_failure"] = ref.model64_error
    if timing_cfg is not None:
        timing_cfg.setdefault("precision", terms["precision"])
        reply["timing"] = run_timing(timing_cfg, task, ref, cand, device, ledger)
    reply["tampered"] = list(ledger.names)
    return reply


def _second_shape(req, terms, seed, device, ledger, atol, rtol, want64, first_cand, ops) -> dict:
    """One more check, candidate first, on inputs made with the contract's
    second shape (module-level integers of the task overridden). A hybrid is
    constructed again from the same module with the new init inputs."""
    shape = terms["second_shape"]
    where = contract.describe_shape(shape)
    task2 = contract.task_variant(req.get("task"), shape)
    ref2 = Reference(task2, device.torch_device, int(req.get("init_seed", 42)))
    if isinstance(first_cand, CudaCandidate):
        cand2 = CudaCandidate(req["candidate"].get("so"), ref2, device)
    else:
        try:
            cand2 = HybridCandidate(req["candidate"].get("path"), ref2, module=first_cand.module)
        except CandidateLoadError as e:
            raise CandidateLoadError(f"on the contract's second shape ({where}): {e}", e.cause) from e
    ledger.check()
    run = _Run(task2, ref2, cand2, device, ledger, atol, rtol, want64, terms["precision"], ops)
    run.fp_base = int(req.get("fp_key", 0))
    try:
        if isinstance(cand2, CudaCandidate):
            run.set_output_specs(seed)
        check = run.check(seed, rerun=False, order="candidate_first")
    except CandidateRunError as e:
        raise CandidateRunError(f"on the contract's second shape ({where}): {e}", e.cause) from e
    except BaseException as e:  # a CUDA fault, OOM, ...: the worker names where it happened
        e.kopt_where = f"on the contract's second shape ({where})"
        raise
    check["second_shape"] = dict(shape)
    del run, cand2, ref2
    device.empty_cache()
    return check


def _state_checks(ref_wrote, cand_state, snapshot, atol, rtol) -> list:
    """State the reference's forward writes (BatchNorm's running statistics
    in training mode) must be written alike by the candidate: one entry per
    tensor the reference changed, {name, ok, max_abs_err} or {name, ok,
    why}. A hybrid whose ModelNew state does not mirror Model's (cand_state
    None) is not checked."""
    out = []
    if cand_state is None:
        return [{"name": n, "ok": True, "unchecked": "ModelNew's state does not mirror Model's"} for n in ref_wrote]
    for n, want in ref_wrote.items():
        got = cand_state.get(n)
        if got is None or tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
            out.append({"name": n, "ok": False, "why": "the candidate has no such tensor of that shape and dtype"})
            continue
        with torch.no_grad():
            if want.is_floating_point():
                diff = (got.double() - want.double()).abs()
                err = float(diff.max()) if diff.numel() else 0.0
                ok = bool(torch.isfinite(got).eq(torch.isfinite(want)).all()) and bool(
                    (diff <= atol + rtol * want.double().abs()).logical_or(got.double().eq(want.double())).all())
            else:
                ok = bool(torch.equal(got, want))
                err = 0.0 if ok else float((got.double() - want.double()).abs().max())
        out.append({"name": n, "ok": ok, "max_abs_err": err, "unchanged": bitwise_equal(got, snapshot[n])})
    return out


class _Run:
    """Checks one candidate against one reference, seed by seed."""

    def __init__(self, task, ref, cand, device, ledger, atol, rtol, want64, precision, ops):
        self.task, self.ref, self.cand, self.device, self.ledger = task, ref, cand, device, ledger
        self.atol, self.rtol, self.want64, self.precision, self.ops = atol, rtol, want64, precision, ops
        self.fp_base = 0

    def set_output_specs(self, seed: int) -> None:
        # Output shapes/dtypes for the candidate's buffers, from a reference
        # run on other inputs than any checked seed.
        probe_seed = seed + SHAPE_PROBE_SEED_OFFSET
        probe = make_inputs(self.task, probe_seed, self.device.torch_device)
        outs = _ref_forward(self.ref, probe, probe_seed)
        self.cand.set_output_specs(outs)
        del outs, probe
        self.device.empty_cache()

    def _run_candidate(self, args, seed):
        with contract.recording(self.ops is not None) as rec:
            outs = self.cand.run(args, seed)
        if rec.ops is not None:
            _merge(self.ops["candidate"], rec.ops)
            self.ops["candidate_forwards"] = self.ops.get("candidate_forwards", 0) + 1
        return outs

    def _run_reference(self, pristine, seed):
        rec = contract.recording(self.ops is not None and not self.ops["reference"])
        outs = _ref_forward(self.ref, pristine, seed, rec if rec.ops is not None else None)
        if rec.ops:
            _merge(self.ops["reference"], rec.ops)
        return outs

    def check(self, seed: int, rerun: bool, order: Optional[str] = None, distribution: str = "task") -> dict:
        cand, ref, device = self.cand, self.ref, self.device
        args = make_inputs(self.task, seed, device.torch_device, distribution)
        arg_names = forward_arg_names(ref.model, len(args))
        pristine = clone_args(args)
        key = fp_key(self.fp_base, seed, distribution)
        input_fp = fingerprints(pristine, key)
        order = order or ("candidate_first" if seed % 2 else "reference_first")
        cand_outs: Optional[List[torch.Tensor]] = None
        ref_outs: Optional[List[torch.Tensor]] = None
        cand_ms = None
        ref_wrote: Dict[str, torch.Tensor] = {}  # state the reference's forward wrote: its values after
        for step in ((("candidate", "reference") if order == "candidate_first" else ("reference", "candidate"))):
            if step == "candidate":
                cand.restore_state()  # from the state the reference starts from, every check
                device.sync()
                c0 = ORIG.perf_counter()
                cand_outs = self._run_candidate(args, seed)
                device.sync()
                cand_ms = (ORIG.perf_counter() - c0) * 1e3
                self.ledger.check()  # before any check runs a torch function
                exact = [exact_tensor(o) for o in cand_outs]
                cand_outs = [o if ok else plain(o) for o, ok in zip(cand_outs, exact)]
            else:
                ref_outs = self._run_reference(pristine, seed)
                device.sync()
                with torch.no_grad():
                    ref_wrote = {n: t.detach().clone() for n, t in ref.params + ref.buffers
                                 if not bitwise_equal(t, ref.snapshot[n])}
            device.empty_cache()

        fwd_tensors = [(a, p) for a, p in zip(args, pristine) if isinstance(a, torch.Tensor)]
        mutated_names = [n for n, (a, p) in zip(arg_names, zip(args, pristine))
                         if isinstance(a, torch.Tensor) and not bitwise_equal(a, p)]
        if isinstance(cand, CudaCandidate):
            for name, role, t in cand.state:
                if name not in ref_wrote and not bitwise_equal(t, ref.snapshot[name]):
                    mutated_names.append(name)
        state = _state_checks(ref_wrote, cand.state_now(), ref.snapshot, self.atol, self.rtol)
        alias_targets = [a for a, _ in fwd_tensors]
        if not isinstance(cand, CudaCandidate):
            alias_targets += [t for t in cand.model.parameters()] + [t for t in cand.model.buffers()]

        ref64 = ref.forward64(clone_args(pristine), seed) if self.want64 else None
        if ref64 is not None and len(ref64) != len(ref_outs):
            ref64 = None
        lowp = contract.forward_lowp(ref, clone_args(pristine), seed, self.precision) if ref64 is not None else None

        outputs = []
        for i in range(max(len(ref_outs), len(cand_outs))):
            c = cand_outs[i] if i < len(cand_outs) else None
            if i >= len(ref_outs):
                if c is not None:
                    outputs.append(checks.extra_output_entry(c))
                    outputs[-1]["exact_tensor"] = exact[i]
                continue
            r = ref_outs[i]
            r64 = ref64[i] if ref64 is not None else None
            if r64 is not None and not isinstance(r64, torch.Tensor):
                r64 = None
            poison = poison_left(c) if (isinstance(cand, CudaCandidate) and c is not None) else 0
            aliases = c is not None and any(overlaps(c, a) for a in alias_targets)
            outputs.append(checks.output_entry(c, r, r64, self.atol, self.rtol, poison, aliases))
            outputs[-1]["exact_tensor"] = exact[i] if i < len(exact) else True
            checks.add_lowp(outputs[-1], lowp, i, r64, self.precision)
        if rerun:
            diffs = _rerun(cand, pristine, seed, cand_outs, device, self.ledger)
            for e, d in zip(outputs, diffs):
                e["rerun_rel_diff"] = d
        check = {"seed": seed, "order": order, "distribution": distribution, "inputs_mutated": bool(mutated_names),
                 "mutated_inputs": mutated_names, "state": state, "outputs": outputs, "candidate_ms": cand_ms,
                 "n_outputs": len(cand_outs), "n_ref_outputs": len(ref_outs),
                 # What this process's reference computed on what inputs, for
                 # comparison with a clean process (verdict.cc).
                 "input_fp": input_fp, "ref_fp": fingerprints(ref_outs, key),
                 "ref64_fp": fingerprints(ref64, key) if ref64 is not None else None}
        del args, pristine, cand_outs, ref_outs, ref64, lowp
        device.empty_cache()
        return check


def _merge(into: dict, ops: dict) -> None:
    for k, v in ops.items():
        into[k] = into.get(k, 0) + v


RERUN_GARBAGE_SEED = 1234567


def _rerun(cand, pristine, seed, first_outs, device, ledger) -> List[Optional[float]]:
    """Runs the candidate again on fresh copies of the same inputs and returns,
    per output, ‖first − second‖ / ‖first‖ (None where it cannot be compared).

    Between the runs the allocator is emptied and a buffer of random bytes the
    size of the outputs is allocated and freed, so memory the candidate reads
    without writing holds different data the second time: a kernel that reads
    uninitialised memory, or races, gives a different answer; a deterministic
    one gives exactly the same bits."""
    args = clone_args(pristine)
    device.sync()
    device.empty_cache()
    size = sum(nbytes(o) for o in first_outs if isinstance(o, torch.Tensor))
    if size > 0:
        gen = torch.Generator(device=device.torch_device)
        gen.manual_seed(RERUN_GARBAGE_SEED + seed)
        garbage = torch.randint(0, 256, (size,), dtype=torch.uint8, device=device.torch_device, generator=gen)
        device.sync()
        del garbage  # back to the caching allocator: the next allocations reuse it
    outs = cand.run(args, seed)
    device.sync()
    ledger.check()
    diffs: List[Optional[float]] = []
    for i, a in enumerate(first_outs):
        b = outs[i] if i < len(outs) else None
        if not isinstance(a, torch.Tensor) or b is None:
            diffs.append(None)
            continue
        b = plain(b) if not exact_tensor(b) else b
        diffs.append(checks.rel_diff(a, b) if b is not None else None)
    del outs, args
    return diffs


def run_time(req: dict, device) -> dict:
    if "timing" not in req or not req["timing"]:
        raise BadRequest("`time` needs a `timing` object")
    cfg = parse_timing(req["timing"])
    init_seed = int(req.get("init_seed", 42))
    task, ref = get_reference(req.get("task"), device.torch_device, init_seed)
    dev = device.torch_device
    ledger = Ledger()
    t0 = ORIG.perf_counter()
    cand = load_candidate(req.get("candidate"), ref, device)
    load_ms = (ORIG.perf_counter() - t0) * 1e3
    ledger.check()
    if isinstance(cand, CudaCandidate):
        probe = make_inputs(task, int(cfg["seed"]), dev)
        cand.set_output_specs(_ref_forward(ref, probe, int(cfg["seed"])))
        del probe
    out = run_timing(cfg, task, ref, cand, device, ledger)
    out["load_ms"] = load_ms if cand is not None else None
    probe = req.get("probe")
    if isinstance(probe, dict) and cand is not None:
        # After the candidate ran its timed calls in this process: the
        # reference on a verification seed's inputs, fingerprinted, so the
        # verdict can see whether it still computes what a clean process does.
        seed = int(probe.get("seed", 0))
        key = fp_key(int(probe.get("fp_key", 0)), seed, "task")
        args = make_inputs(task, seed, dev)
        outs = _ref_forward(ref, args, seed)
        out["ref_probe"] = {"seed": seed, "input_fp": fingerprints(args, key), "ref_fp": fingerprints(outs, key)}
        ledger.check()
        out["tampered"] = list(ledger.names)
        del outs, args
    return out


def run_reference(req: dict, device) -> dict:
    """The clean process's facts: for each check the candidate's process will
    run (seeds on the task's distribution, the contract's other
    distributions, the second shape), fingerprints of the inputs, the fp32
    reference's outputs and the float64 reference's, and the fp32 reference's
    own error. Only ever sent to a worker that never loaded a candidate."""
    seeds = req.get("seeds", [11, 12, 13])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise BadRequest("`seeds` must be a non-empty list of integers")
    terms = contract.parse(req.get("contract"))
    base = int(req.get("fp_key", 0))
    want64 = bool(req.get("fp64", True))
    init_seed = int(req.get("init_seed", 42))
    task, ref = get_reference(req.get("task"), device.torch_device, init_seed)
    plan = [(s, "task", None) for s in seeds] + [(seeds[0], d, None) for d in _distributions(req)]
    if terms["second_shape"]:
        plan.append((seeds[0], "task", terms["second_shape"]))
    out = []
    for seed, dist, shape in plan:
        t, r = task, ref
        if shape:
            t = contract.task_variant(req.get("task"), shape)
            r = Reference(t, device.torch_device, init_seed)
        key = fp_key(base, seed, dist)
        args = make_inputs(t, seed, device.torch_device, dist)
        outs = _ref_forward(r, clone_args(args), seed)
        outs64 = r.forward64(clone_args(args), seed) if want64 else None
        if outs64 is not None and len(outs64) != len(outs):
            outs64 = None
        err = None
        if outs64 is not None:
            err = [checks.compare(o, o64) if isinstance(o, torch.Tensor) and isinstance(o64, torch.Tensor) and
                   tuple(o.shape) == tuple(o64.shape) else None for o, o64 in zip(outs, outs64)]
        entry = {"seed": seed, "distribution": dist, "input_fp": fingerprints(args, key),
                 "ref_fp": fingerprints(outs, key), "ref64_fp": fingerprints(outs64, key) if outs64 is not None else None,
                 "ref_error": err,
                 "finite": all(checks.count_nan_inf(o) == (0, 0) for o in outs if isinstance(o, torch.Tensor))}
        if shape:
            entry["second_shape"] = dict(shape)
        out.append(entry)
        del args, outs, outs64
        device.empty_cache()
    return {"checks": out}
