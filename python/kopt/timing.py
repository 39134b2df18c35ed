"""Interleaved timing of contenders (candidate, eager, compile) and energy."""

from __future__ import annotations

import gc
import math
import os
import random
from typing import Any, Callable, Dict, List, Optional

import torch

from .errors import BadRequest, classify
from . import checks
from .inputs import clone_args, make_inputs, nbytes
from .integrity import ORIG, Ledger, exact_tensor, plain

# An experiment, read once before any candidate loads (bench/gpu_steps.sh
# drift): KOPT_FRESH_ALLOCATOR=1 hands the caching allocator's free blocks
# back to the driver before each timing's input sets are made, to test
# whether a worker's allocation history moves memory-bound times
# (bench/results/README.md, session 5).
_FRESH_ALLOCATOR = os.environ.get("KOPT_FRESH_ALLOCATOR") == "1"

DEFAULTS = {
    "contenders": ["candidate", "eager"],
    "warmup_ms": 200.0,
    "min_reps": 30,
    "max_reps": 2000,
    "max_seconds": 3.0,
    "target_rel_ci": 0.01,
    "flush_l2": True,
    # A spin kernel ahead of the flush, so kopt's launch latency hides behind
    # GPU work (kopt.device.Device.timer).
    "head_start_us": 50.0,
    # GPU work (reads of the flush buffer) over the host's gap between timed
    # calls, so the GPU never idles long enough to slow down (kopt.device.
    # Device.timer; bench/results, session 13).
    "bridge_gaps": True,
    "rotate_min_bytes": 0,
    "energy": True,
    "batch": 5,
    "seed": 1000,
    # Timed calls whose outputs are checked after the fact: each timed call of
    # every contender is checked with this probability, decided by a secret
    # random draw after the call returned, so no candidate can tell which of
    # its timed calls will be judged (docs/verification.md, "Timed calls").
    "check_p": 0.05,
    # A candidate timed below floor_ms * suspicious_fraction (the reference
    # algorithm's roofline floor, from the verdict side) is checked with
    # probability suspicious_check_p instead.
    "floor_ms": 0.0,
    "suspicious_fraction": 0.5,
    "suspicious_check_p": 0.25,
}
MAX_INPUT_SETS = 64
ENERGY_WINDOW_S = 0.5


# The interval of the median. Its home is src/core/stats.cc
# (MedianIntervalRanks, Summarize: the interval the verdict reports); this is
# its mirror, so the adaptive stop below ends at the interval the verdict
# will see. tests/data/stats/intervals.json pins both to the same cases.
def median_interval_ranks(n: int) -> tuple:
    """0-based ranks in the sorted samples of the 95% interval of the median:
    1-based floor(n/2 - 1.96*sqrt(n)/2) and ceil(1 + n/2 + 1.96*sqrt(n)/2),
    clamped into the samples."""
    if n <= 0:
        return 0, 0
    z = 1.96
    lo = int(math.floor(n / 2 - z * math.sqrt(n) / 2)) - 1
    hi = int(math.ceil(n / 2 + z * math.sqrt(n) / 2))
    return min(max(lo, 0), n - 1), min(max(hi, 0), n - 1)


def median_interval(samples: List[float]) -> tuple:
    """(median, low, high): the median and its 95% order-statistic interval."""
    x = sorted(samples)
    n = len(x)
    if n == 0:
        return 0.0, 0.0, 0.0
    lo, hi = median_interval_ranks(n)
    med = x[n // 2] if n % 2 else 0.5 * (x[n // 2 - 1] + x[n // 2])
    return med, x[lo], x[hi]


def median_ci_rel(samples: List[float]) -> float:
    """Half-width of the 95% interval of the median, over the median; inf
    below 6 samples (the adaptive stop never trusts fewer)."""
    if len(samples) < 6:
        return math.inf
    med, low, high = median_interval(samples)
    if med <= 0:
        return math.inf
    return 0.5 * (high - low) / med


def parse_timing(t: Any) -> dict:
    if not isinstance(t, dict):
        raise BadRequest("`timing` must be an object")
    cfg = dict(DEFAULTS)
    cfg.update({k: v for k, v in t.items() if v is not None})
    cs = cfg["contenders"]
    if not isinstance(cs, list) or not cs or not all(c in ("candidate", "eager", "compile") for c in cs):
        raise BadRequest("timing.contenders must be a non-empty list of candidate/eager/compile")
    return cfg


class _Contender:
    def __init__(self, name: str):
        self.name = name
        self.fns: List[Callable] = []  # one per input set
        self.event_ms: List[float] = []
        self.host_ms: List[float] = []
        self.error: Optional[str] = None
        self.error_kind: Optional[str] = None
        self.calls = 0  # timed calls made
        self.checks: List[dict] = []  # timed calls judged after the fact

    def fail(self, e: BaseException) -> None:
        kind, fatal = classify(e)
        if fatal:
            raise e
        self.error = f"{type(e).__name__}: {e}"
        self.error_kind = kind


def _null():
    return None


def refresh_inputs(args: List[Any], rng: random.Random, twin: Optional[List[Any]] = None) -> None:
    """Changes the contents of an input set a little, in place: in every
    contiguous floating-point tensor one element takes the value of another
    (the distribution stays that of get_inputs()). Run before each timed call,
    outside the timed region, so no two timed calls see the same contents and
    a result cached by content cannot be replayed. `twin` (the set's pristine
    copy) gets the same change."""
    for k, a in enumerate(args):
        if not isinstance(a, torch.Tensor) or not a.is_floating_point() or not a.is_contiguous():
            continue
        n = a.numel()
        if n < 2:
            continue
        j = rng.randrange(n)
        i = (j + 1 + rng.randrange(n - 1)) % n
        for t in ((a, twin[k]) if twin is not None else (a,)):
            flat = t.view(-1)
            flat[j:j + 1].copy_(flat[i:i + 1])


class _SecretDraw:
    """Draws from the OS's entropy through the reference saved at start-up
    (integrity.ORIG.urandom): nothing in the process can predict or replay it."""

    def __init__(self):
        import os

        self._urandom = getattr(ORIG, "urandom", None) or os.urandom

    def below(self, p: float) -> bool:
        if p <= 0:
            return False
        return int.from_bytes(self._urandom(7), "little") < p * (1 << 56)


def run_timing(cfg: dict, task, ref, candidate, device, ledger: Optional[Ledger] = None) -> dict:
    ledger = ledger if ledger is not None else Ledger()
    dev = device.torch_device
    l2 = device.l2_bytes()
    rotate = int(cfg.get("rotate_min_bytes") or 0)
    if rotate <= 0:
        rotate = 2 * l2

    # Input sets.
    if _FRESH_ALLOCATOR and device.is_cuda:
        gc.collect()
        device.empty_cache()
    first = make_inputs(task, int(cfg["seed"]), dev)
    set_bytes = sum(nbytes(a) for a in first if isinstance(a, torch.Tensor))
    n_sets = 1
    if rotate > 0 and set_bytes > 0:
        n_sets = rotate // set_bytes + 1
        free = device.free_bytes()
        if free:
            n_sets = min(n_sets, max(1, int(0.25 * free) // set_bytes))
        n_sets = max(1, min(n_sets, MAX_INPUT_SETS))
    sets = [first] + [make_inputs(task, int(cfg["seed"]) + i, dev) for i in range(1, n_sets)]

    # The L2 is flushed by *reading* twice its size: that evicts the previous
    # call's lines (their write-backs happen here, untimed) and leaves clean
    # lines. A zero_() flush left up to an L2's worth of dirty lines whose
    # write-back (about 13 us at 4.5 TB/s, estimated) fell inside the timed call.
    flush = None
    flush_out = None
    if device.is_cuda and cfg.get("flush_l2", True) and l2 > 0:
        flush = torch.zeros(2 * l2 // 4, dtype=torch.float32, device=dev)
        flush_out = torch.empty((), dtype=torch.float32, device=dev)

    contenders: Dict[str, _Contender] = {}
    for name in cfg["contenders"]:
        if name in contenders:
            continue
        c = _Contender(name)
        contenders[name] = c
        try:
            if name == "candidate":
                if candidate is None:
                    c.error, c.error_kind = "no candidate given", "bad_request"
                    continue
                c.fns = [candidate.timed_fn(s) for s in sets]
            elif name == "eager":
                ref.restore()
                c.fns = [_model_fn(ref.model, s) for s in sets]
            elif name == "compile":
                if not hasattr(torch, "compile"):
                    raise RuntimeError(f"torch.compile is unavailable in torch {torch.__version__}")
                ref.restore()
                compiled = torch.compile(ref.model)
                c.fns = [_model_fn(compiled, s) for s in sets]
        except Exception as e:  # noqa: BLE001
            c.fail(e)

    # Warm-up (the first call of a compiled model compiles it).
    warm_s = float(cfg["warmup_ms"]) / 1000.0
    for c in contenders.values():
        if c.error:
            continue
        try:
            c.fns[0]()
            device.sync()
            t0 = ORIG.perf_counter()
            i = 0
            while True:
                c.fns[i % len(c.fns)]()
                i += 1
                device.sync()
                if ORIG.perf_counter() - t0 >= warm_s:
                    break
        except Exception as e:  # noqa: BLE001
            c.fail(e)
        if c.name == "candidate":
            ledger.check()

    def _flush():
        torch.sum(flush, dim=0, out=flush_out)

    bridge = _bridge(flush, device) if flush is not None and cfg.get("bridge_gaps", True) else None
    timer = device.timer(pre=_flush if flush is not None else None,
                         head_start_us=float(cfg.get("head_start_us", DEFAULTS["head_start_us"])),
                         bridge=bridge)
    # Pristine copies of the input sets (refreshed alongside them), so a timed
    # call chosen for checking is judged on exactly the inputs it was given.
    checker = None
    pristine: Optional[List[List[Any]]] = None
    draw = _SecretDraw()
    if float(cfg.get("check_p", 0)) > 0 or float(cfg.get("suspicious_check_p", 0)) > 0:
        pristine = [clone_args(s) for s in sets]
        checker = _TimedChecks(cfg, ref, candidate, sets, pristine, device, ledger, use_event=device.is_cuda)
    # A call that does nothing, timed the same way in the same loop: the host
    # clock's own overhead (synchronize, clock reads, the Python call), so the
    # verdict can tell host time spent on work from host time spent on timing.
    null_host: List[float] = []
    active = [c for c in contenders.values() if not c.error]
    min_reps, max_reps = int(cfg["min_reps"]), int(cfg["max_reps"])
    max_s, target = float(cfg["max_seconds"]), float(cfg["target_rel_ci"])
    batch = max(1, int(cfg.get("batch", 5)))
    use_event = device.is_cuda
    start = ORIG.perf_counter()
    k = 0  # index of the next input set
    rng = random.Random(int(cfg["seed"]))
    refresh = bool(cfg.get("refresh_inputs", True))
    rounds = 0
    stop = "max_reps" if active else "no_contenders"
    while active:
        rounds += 1
        order = active[rounds % len(active):] + active[:rounds % len(active)]
        for c in order:
            if c.error:
                continue
            n_now = min(batch, max_reps - len(c.host_ms))
            for _ in range(n_now):
                idx = k % len(c.fns)
                fn = c.fns[idx]
                if refresh:
                    refresh_inputs(sets[k % len(sets)], rng, pristine[k % len(sets)] if pristine else None)
                k += 1
                try:
                    ev, host, result = timer(fn)
                except Exception as e:  # noqa: BLE001
                    c.fail(e)
                    break
                if c.name == "candidate":
                    ledger.check()  # outside the timed region
                if ev is not None:
                    c.event_ms.append(float(ev))
                c.host_ms.append(float(host))
                c.calls += 1
                # After the call returned: should this one be judged?
                if checker is not None and draw.below(checker.p(c)):
                    try:
                        checker.check(c, result, idx)
                    except Exception as e:  # noqa: BLE001
                        c.fail(e)
                        break
                del result
        for _ in range(batch):
            null_host.append(float(timer(_null)[1]))
        active = [c for c in active if not c.error]
        if not active:
            stop = "errors"
            break
        if all(len(c.host_ms) >= max_reps for c in active):
            stop = "max_reps"
            break
        if all(len(c.host_ms) >= min_reps and
               median_ci_rel(c.event_ms if use_event else c.host_ms) <= target for c in active):
            stop = "ci"
            break
        if ORIG.perf_counter() - start >= max_s:
            stop = "max_seconds"
            break
    elapsed = ORIG.perf_counter() - start

    audit = None
    cc = contenders.get("candidate")
    if cc is not None and not cc.error and candidate is not None and cfg.get("audit", True):
        try:
            audit = _audit(cfg, ref, candidate, sets, k, rng, device, ledger)
        except Exception as e:  # noqa: BLE001
            cc.fail(e)

    samples = {}
    for name, c in contenders.items():
        s: dict = {"event_ms": c.event_ms, "host_ms": c.host_ms}  # event_ms stays [] on cpu
        if c.error:
            s["error"] = c.error
            s["error_kind"] = c.error_kind
        samples[name] = s

    energy = None
    if cfg.get("energy", True) and device.is_cuda and device.energy_mj() is not None:
        energy = {}
        for name, c in contenders.items():
            if c.error:
                energy[name] = None
                continue
            try:
                energy[name] = _energy(c, device)
            except Exception as e:  # noqa: BLE001
                kind, fatal = classify(e)
                if fatal:
                    raise
                energy[name] = None
    del flush
    ledger.check()
    timed_checks = None
    if checker is not None:
        timed_checks = {"p": float(cfg.get("check_p", 0)), "suspicious": checker.suspicious,
                        "contenders": {name: {"calls": c.calls, "checks": c.checks}
                                       for name, c in contenders.items()}}
    del pristine, checker
    return {
        "samples": samples,
        "null_host_ms": null_host,
        "timing_audit": audit,
        "timed_checks": timed_checks,
        "tampered": list(ledger.names),
        "energy": energy,
        "meta": {"stop": stop, "rounds": rounds, "elapsed_s": elapsed, "input_sets": n_sets,
                 "set_bytes": set_bytes, "flush_bytes": 2 * l2 if device.is_cuda and cfg.get("flush_l2", True) else 0,
                 "head_start_us": float(cfg.get("head_start_us", DEFAULTS["head_start_us"])) if device.is_cuda else 0.0,
                 "bridged": bridge is not None,
                 "clock": "event" if use_event else "host"},
    }


def _audit(cfg, ref, candidate, sets, k, rng, device, ledger) -> dict:
    """One more candidate call on the next timed input set, its contents
    refreshed as before every timed call, checked against the reference on
    the same contents: the timed calls must compute the answer too (a result
    replayed from a cache keyed by address is stale here)."""
    from .tasks import CudaCandidate

    idx = k % len(sets)
    args = sets[idx]
    refresh_inputs(args, rng)
    seed = int(cfg["seed"]) + idx
    pristine = clone_args(args)
    device.sync()
    outs = candidate.run(args, seed)
    device.sync()
    ledger.check()
    entries = judge_outputs(ref, pristine, seed, outs, cfg.get("precision") or "strict",
                            isinstance(candidate, CudaCandidate))
    # The set keeps its refreshed contents; the candidate's outputs are dropped.
    del outs, pristine
    device.empty_cache()
    return {"seed": seed, "input_set": idx, "outputs": entries}


def judge_outputs(ref, pristine, seed, outs, precision: str, poisoned: bool) -> List[dict]:
    """Per output, the error statistics of `outs` against the reference (fp32,
    float64, and the contract's reduced precision) run on copies of
    `pristine` (checks.output_entry entries; the verdict judges them)."""
    from .tasks import poison_left

    ref_outs = ref.forward(clone_args(pristine), seed)
    ref64 = ref.forward64(clone_args(pristine), seed)
    if ref64 is not None and len(ref64) != len(ref_outs):
        ref64 = None
    lowp = None
    if ref64 is not None and precision != "strict":
        from .contract import forward_lowp

        lowp = forward_lowp(ref, clone_args(pristine), seed, precision)
    entries = []
    for i, r in enumerate(ref_outs):
        c = outs[i] if i < len(outs) else None
        exact = c is None or exact_tensor(c)
        if c is not None and not exact:
            c = plain(c)
        tol = 1e-2 if r.dtype in (torch.float16, torch.bfloat16) else 1e-4
        r64 = ref64[i] if ref64 is not None and isinstance(ref64[i], torch.Tensor) else None
        poison = poison_left(c) if (poisoned and c is not None) else 0
        e = checks.output_entry(c, r, r64, tol, tol, poison, False)
        e["exact_tensor"] = exact
        checks.add_lowp(e, lowp, i, r64, precision)
        entries.append(e)
    del ref_outs, ref64, lowp
    return entries


class _TimedChecks:
    """Judges timed calls after the fact: the outputs of a chosen call are
    copied out (untimed) and compared with the reference run on the pristine
    copy of the inputs that call was given; the inputs must be unchanged."""

    def __init__(self, cfg, ref, candidate, sets, pristine, device, ledger, use_event: bool):
        self.cfg, self.ref, self.candidate, self.sets, self.pristine = cfg, ref, candidate, sets, pristine
        self.device, self.ledger, self.use_event = device, ledger, use_event
        self.base_p = float(cfg.get("check_p", 0))
        self.floor_ms = float(cfg.get("floor_ms") or 0)
        self.fraction = float(cfg.get("suspicious_fraction", 0.5))
        self.suspicious_p = float(cfg.get("suspicious_check_p", 0))
        self.suspicious: Optional[dict] = None

    def p(self, c) -> float:
        """The chance this contender's last call is checked: higher for a
        candidate whose time so far is far below the reference algorithm's
        floor (a reason to check more, not a curiosity)."""
        if c.name != "candidate" or self.floor_ms <= 0:
            return self.base_p
        if self.suspicious is None and c.calls % 5 == 0:
            times = c.event_ms if (self.use_event and c.event_ms) else c.host_ms
            if len(times) >= 5:
                med = sorted(times)[len(times) // 2]
                if med < self.floor_ms * self.fraction:
                    self.suspicious = {"median_ms": med, "floor_ms": self.floor_ms, "fraction": self.fraction,
                                       "after_calls": c.calls, "p": self.suspicious_p}
        return max(self.base_p, self.suspicious_p) if self.suspicious is not None else self.base_p

    def check(self, c, result, fn_index: int) -> None:
        from .inputs import bitwise_equal, flatten_outputs
        from .tasks import CudaCandidate

        self.device.sync()
        outs = [o.clone() if isinstance(o, torch.Tensor) and exact_tensor(o) else
                (plain(o).clone() if isinstance(o, torch.Tensor) and plain(o) is not None else o)
                for o in flatten_outputs(result)]
        if c.name == "candidate":
            self.ledger.check()
        s = fn_index % len(self.sets)
        args, pristine = self.sets[s], self.pristine[s]
        mutated = [i for i, (a, p) in enumerate(zip(args, pristine))
                   if isinstance(a, torch.Tensor) and not bitwise_equal(a, p)]
        for i in mutated:  # later calls get the inputs they should
            args[i].copy_(pristine[i])
        seed = int(self.cfg["seed"]) + s
        entries = judge_outputs(self.ref, pristine, seed, outs, self.cfg.get("precision") or "strict",
                                c.name == "candidate" and isinstance(self.candidate, CudaCandidate))
        c.checks.append({"call": c.calls, "input_set": s, "seed": seed, "inputs_mutated": bool(mutated),
                         "n_outputs": len(outs), "outputs": entries})
        del outs
        self.device.empty_cache()


BRIDGE_MAX_PASSES = 256


def _bridge(flush, device):
    """`bridge(us)` for Device.timer: one kernel that reads the flush buffer
    as many times as fill about `us` microseconds (a stride-0 view: no copy),
    the time of one read measured here once."""
    passes_out = torch.empty(BRIDGE_MAX_PASSES, dtype=torch.float32, device=flush.device)
    stream = ORIG.current_stream(device.index)
    start, end = ORIG.Event(enable_timing=True), ORIG.Event(enable_timing=True)
    reps = 4
    torch.sum(flush.expand(1, -1), dim=1, out=passes_out[:1])
    ORIG.event_record(start, stream)
    torch.sum(flush.expand(reps, -1), dim=1, out=passes_out[:reps])
    ORIG.event_record(end, stream)
    ORIG.synchronize()
    pass_us = max(1.0, 1000.0 * ORIG.event_elapsed(start, end) / reps)

    def bridge(us: float) -> None:
        k = max(1, min(BRIDGE_MAX_PASSES, int(us / pass_us + 0.5)))
        torch.sum(flush.expand(k, -1), dim=1, out=passes_out[:k])

    return bridge


def _model_fn(model, args):
    def fn():
        with torch.no_grad():
            return model(*args)

    return fn


def _energy(c: _Contender, device) -> Optional[dict]:
    device.sync()
    e0 = device.energy_mj()
    if e0 is None:
        return None
    t0 = ORIG.perf_counter()
    calls = 0
    chunk = 1
    while True:
        for _ in range(chunk):
            c.fns[calls % len(c.fns)]()
            calls += 1
        device.sync()
        dt = ORIG.perf_counter() - t0
        if dt >= ENERGY_WINDOW_S:
            break
        # Grow the chunk so syncs stay rare but the window is not overshot much.
        per_call = dt / calls
        remaining = ENERGY_WINDOW_S - dt
        chunk = max(1, min(int(remaining / max(per_call, 1e-7) * 0.5) + 1, 4096))
    e1 = device.energy_mj()
    window = ORIG.perf_counter() - t0
    if e1 is None:
        return None
    return {"mj_per_call": (e1 - e0) / calls, "calls": calls, "window_s": window}
