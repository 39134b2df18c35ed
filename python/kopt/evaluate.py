"""`evaluate` and `time`: run a candidate against the reference."""

from __future__ import annotations

from typing import Any, List, Optional

import torch

from . import checks
from .errors import BadRequest, CandidateRunError, TaskLoadError
from .inputs import bitwise_equal, clone_args, make_inputs, nbytes, overlaps
from .integrity import ORIG, Ledger, exact_tensor, plain
from .tasks import CudaCandidate, forward_arg_names, get_reference, load_candidate, poison_left
from .timing import parse_timing, run_timing

SHAPE_PROBE_SEED_OFFSET = 7919


def _tolerances(req: dict):
    tol = req.get("kernelbench_tol") or {}
    if not isinstance(tol, dict):
        raise BadRequest("`kernelbench_tol` must be an object")
    return float(tol.get("atol", 1e-2)), float(tol.get("rtol", 1e-2))


def _ref_forward(ref, pristine, seed):
    try:
        return ref.forward(clone_args(pristine), seed)
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
    init_seed = int(req.get("init_seed", 42))
    task, ref = get_reference(req.get("task"), device.torch_device, init_seed)
    dev = device.torch_device

    ledger = Ledger()
    t0 = ORIG.perf_counter()
    cand = load_candidate(req["candidate"], ref, device)
    device.sync()
    load_ms = (ORIG.perf_counter() - t0) * 1e3
    ledger.check()

    if isinstance(cand, CudaCandidate):
        # Output shapes/dtypes for the candidate's buffers, from a reference
        # run on other inputs than any checked seed.
        probe_seed = seeds[0] + SHAPE_PROBE_SEED_OFFSET
        probe = make_inputs(task, probe_seed, dev)
        outs = _ref_forward(ref, probe, probe_seed)
        cand.set_output_specs(outs)
        del outs, probe
        device.empty_cache()

    want64 = bool(req.get("fp64", True))
    check_list = []
    for seed in seeds:
        args = make_inputs(task, seed, dev)
        arg_names = forward_arg_names(ref.model, len(args))
        pristine = clone_args(args)
        order = "candidate_first" if seed % 2 else "reference_first"
        cand_outs: Optional[List[torch.Tensor]] = None
        ref_outs: Optional[List[torch.Tensor]] = None
        cand_ms = None
        for step in ((("candidate", "reference") if order == "candidate_first" else ("reference", "candidate"))):
            if step == "candidate":
                device.sync()
                c0 = ORIG.perf_counter()
                cand_outs = cand.run(args, seed)
                device.sync()
                cand_ms = (ORIG.perf_counter() - c0) * 1e3
                ledger.check()  # before any check runs a torch function
                exact = [exact_tensor(o) for o in cand_outs]
                cand_outs = [o if ok else plain(o) for o, ok in zip(cand_outs, exact)]
            else:
                ref_outs = _ref_forward(ref, pristine, seed)
                device.sync()
            device.empty_cache()

        fwd_tensors = [(a, p) for a, p in zip(args, pristine) if isinstance(a, torch.Tensor)]
        mutated_names = [n for n, (a, p) in zip(arg_names, zip(args, pristine))
                         if isinstance(a, torch.Tensor) and not bitwise_equal(a, p)]
        if isinstance(cand, CudaCandidate):
            for name, role, t in cand.state:
                if not bitwise_equal(t, ref.snapshot[name]):
                    mutated_names.append(name)
        alias_targets = [a for a, _ in fwd_tensors]
        if not isinstance(cand, CudaCandidate):
            alias_targets += [t for t in cand.model.parameters()] + [t for t in cand.model.buffers()]

        ref64 = ref.forward64(clone_args(pristine), seed) if want64 else None
        if ref64 is not None and len(ref64) != len(ref_outs):
            ref64 = None

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
            outputs.append(checks.output_entry(c, r, r64, atol, rtol, poison, aliases))
            outputs[-1]["exact_tensor"] = exact[i] if i < len(exact) else True
        if seed == seeds[0]:
            diffs = _rerun(cand, pristine, seed, cand_outs, device, ledger)
            for e, d in zip(outputs, diffs):
                e["rerun_rel_diff"] = d
        check = {"seed": seed, "order": order, "inputs_mutated": bool(mutated_names),
                 "mutated_inputs": mutated_names, "outputs": outputs, "candidate_ms": cand_ms,
                 "n_outputs": len(cand_outs), "n_ref_outputs": len(ref_outs)}
        check_list.append(check)
        del args, pristine, cand_outs, ref_outs, ref64
        device.empty_cache()

    reply: dict = {"checks": check_list, "load_ms": load_ms, "tampered": ledger.names,
                   "weights_copied": bool(getattr(cand, "weights_copied", False))}
    if want64 and ref.model64_error:
        reply["ref64_failure"] = ref.model64_error
    if timing_cfg is not None:
        reply["timing"] = run_timing(timing_cfg, task, ref, cand, device, ledger)
    reply["tampered"] = list(ledger.names)
    return reply


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
    return out
