"""`evaluate` and `time`: run a candidate against the reference."""

from __future__ import annotations

import time
from typing import Any, List, Optional

import torch

from . import checks
from .errors import BadRequest, CandidateRunError, TaskLoadError
from .inputs import bitwise_equal, clone_args, make_inputs, overlaps
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

    t0 = time.perf_counter()
    cand = load_candidate(req["candidate"], ref, device)
    device.sync()
    load_ms = (time.perf_counter() - t0) * 1e3

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
                c0 = time.perf_counter()
                cand_outs = cand.run(args, seed)
                device.sync()
                cand_ms = (time.perf_counter() - c0) * 1e3
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
                outputs.append(checks.extra_output_entry(c))
                continue
            r = ref_outs[i]
            r64 = ref64[i] if ref64 is not None else None
            if r64 is not None and not isinstance(r64, torch.Tensor):
                r64 = None
            poison = poison_left(c) if (isinstance(cand, CudaCandidate) and c is not None) else 0
            aliases = c is not None and any(overlaps(c, a) for a in alias_targets)
            outputs.append(checks.output_entry(c, r, r64, atol, rtol, poison, aliases))
        check = {"seed": seed, "order": order, "inputs_mutated": bool(mutated_names),
                 "mutated_inputs": mutated_names, "outputs": outputs, "candidate_ms": cand_ms,
                 "n_outputs": len(cand_outs), "n_ref_outputs": len(ref_outs)}
        check_list.append(check)
        del args, pristine, cand_outs, ref_outs, ref64
        device.empty_cache()

    reply: dict = {"checks": check_list, "load_ms": load_ms,
                   "weights_copied": bool(getattr(cand, "weights_copied", False))}
    if want64 and ref.model64_error:
        reply["ref64_failure"] = ref.model64_error
    if timing_cfg is not None:
        reply["timing"] = run_timing(timing_cfg, task, ref, cand, device)
    return reply


def run_time(req: dict, device) -> dict:
    if "timing" not in req or not req["timing"]:
        raise BadRequest("`time` needs a `timing` object")
    cfg = parse_timing(req["timing"])
    init_seed = int(req.get("init_seed", 42))
    task, ref = get_reference(req.get("task"), device.torch_device, init_seed)
    dev = device.torch_device
    t0 = time.perf_counter()
    cand = load_candidate(req.get("candidate"), ref, device)
    load_ms = (time.perf_counter() - t0) * 1e3
    if isinstance(cand, CudaCandidate):
        probe = make_inputs(task, int(cfg["seed"]), dev)
        cand.set_output_specs(_ref_forward(ref, probe, int(cfg["seed"])))
        del probe
    out = run_timing(cfg, task, ref, cand, device)
    out["load_ms"] = load_ms if cand is not None else None
    return out
