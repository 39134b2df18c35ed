"""The worker's facts behind the defences against a search that attacks the
harness (docs/verification.md): extra input distributions, timed calls judged
after the fact, and fingerprints of the reference that a clean process can
confirm. The verdicts on these facts are tested in C++ (run/verdict_test.cc)
and end to end in tests/cli_test.cc."""

import pytest
import torch

from conftest import Worker, data

from kopt import inputs
from kopt.fingerprint import fingerprint


def hybrid(name):
    return {"kind": "hybrid", "path": data(name)}


def evaluate(worker, task, cand, seeds=(11, 12), **kw):
    return worker.call("evaluate", task=data(task), candidate=cand, seeds=list(seeds),
                       kernelbench_tol={"atol": 1e-4, "rtol": 1e-4}, fp64=True, timing=None, **kw)


def worst64(check):
    return max(o["vs_ref64"]["rel_l2"] for o in check["outputs"])


# ---------------------------------------------------------------- distributions

def test_distributions_transform_floats_only():
    x = torch.rand(5, 7)
    idx = torch.arange(5)
    args = [x, idx, 3]
    signed = inputs.apply_distribution(args, "signed", 11)
    assert signed[1] is idx and signed[2] == 3
    assert torch.equal(signed[0].abs(), x)  # magnitudes kept
    assert (signed[0] < 0).any() and (signed[0] > 0).any()
    assert torch.equal(x, args[0])  # the original is untouched
    wide = inputs.apply_distribution(args, "wide", 11)
    assert torch.allclose(wide[0], signed[0] * inputs.WIDE_SCALE)
    again = inputs.apply_distribution(args, "signed", 11)
    assert torch.equal(again[0], signed[0])  # seeded: both processes agree
    other = inputs.apply_distribution(args, "signed", 12)
    assert not torch.equal(other[0], signed[0])
    assert inputs.apply_distribution(args, "task", 11) is args
    t = torch.rand(6, 4).t()  # strides are kept
    assert inputs.apply_distribution([t], "signed", 1)[0].stride() == t.stride()


def test_capture_says_where_the_reference_is_defined(worker):
    r = worker.call("capture", task=data("relu_rand.py"), seeds=[0, 1])
    assert r["ok"], r
    d = r["distributions"]
    assert set(d) == {"signed", "wide"}
    assert d["signed"]["finite"] and d["signed"]["changes_inputs"]
    r = worker.call("capture", task=data("log_rand.py"), seeds=[0, 1])
    assert r["ok"], r
    assert r["distributions"]["signed"]["finite"] is False
    assert r["distributions"]["wide"]["finite"] is False


def test_identity_relu_is_right_only_on_the_task_distribution(worker):
    r = evaluate(worker, "relu_rand.py", hybrid("adv_relu_identity.py"), distributions=["signed", "wide"])
    assert r["ok"], r
    by = {(c["distribution"], c["seed"]): c for c in r["checks"]}
    assert worst64(by[("task", 11)]) == 0 and worst64(by[("task", 12)]) == 0
    assert worst64(by[("signed", 11)]) > 0.5
    assert worst64(by[("wide", 11)]) > 0.5
    honest = evaluate(worker, "relu_rand.py", hybrid("relu_ok_any.py"), distributions=["signed", "wide"])
    assert all(worst64(c) == 0 for c in honest["checks"])


# ------------------------------------------------------------ timed-call checks

def time_candidate(worker, task, cand, **timing):
    cfg = {"contenders": ["candidate", "eager"], "max_seconds": 0.3, "min_reps": 10, "warmup_ms": 5,
           "energy": False, "batch": 2}
    cfg.update(timing)
    return worker.call("time", task=data(task), candidate=cand, timing=cfg)


def failing_checks(reply, who="candidate"):
    out = []
    for c in reply["timed_checks"]["contenders"][who]["checks"]:
        bad = any(o["vs_ref64"] is None or o["vs_ref64"]["rel_l2"] > 1e-3 for o in c["outputs"])
        if bad or c["inputs_mutated"]:
            out.append(c)
    return out


@pytest.mark.parametrize("cheat", ["adv_timed_stack.py", "adv_timed_counter.py"])
def test_timed_calls_are_judged_after_the_fact(worker, cheat):
    # Verification sees the honest path; only the timed calls skip the work.
    v = evaluate(worker, "relu_sized.py", hybrid(cheat), seeds=(11,))
    assert v["ok"] and worst64(v["checks"][0]) == 0
    r = time_candidate(worker, "relu_sized.py", hybrid(cheat), check_p=1.0)
    assert r["ok"], r
    tc = r["timed_checks"]["contenders"]
    assert tc["candidate"]["calls"] >= 10 and len(tc["candidate"]["checks"]) == tc["candidate"]["calls"]
    assert failing_checks(r), r["timed_checks"]
    # Every contender is checked alike, and the reference's own calls agree.
    assert len(tc["eager"]["checks"]) == tc["eager"]["calls"] > 0
    assert not failing_checks(r, "eager")


def test_an_honest_kernel_passes_every_timed_check(worker):
    r = time_candidate(worker, "relu_sized.py", hybrid("relu_ok_any.py"), check_p=1.0)
    assert r["ok"], r
    assert r["timed_checks"]["contenders"]["candidate"]["checks"]
    assert not failing_checks(r)
    assert r["timed_checks"]["suspicious"] is None


def test_timed_checks_are_drawn_at_random():
    from kopt.timing import _SecretDraw

    d = _SecretDraw()
    hits = sum(d.below(0.25) for _ in range(4000))
    assert 800 < hits < 1200
    assert not any(d.below(0) for _ in range(100))
    assert all(d.below(1.0) for _ in range(100))


def test_a_time_far_below_the_floor_checks_more(worker):
    # A floor far above anything the CPU measures: the candidate is suspicious.
    r = time_candidate(worker, "relu_sized.py", hybrid("relu_ok_any.py"), check_p=0.0, floor_ms=1e6,
                       suspicious_check_p=1.0)
    assert r["ok"], r
    s = r["timed_checks"]["suspicious"]
    assert s is not None and s["floor_ms"] == 1e6 and s["p"] == 1.0
    assert len(r["timed_checks"]["contenders"]["candidate"]["checks"]) > 0
    assert r["timed_checks"]["contenders"]["eager"]["checks"] == []


# --------------------------------------------------- the reference, checked clean

def test_fingerprints_are_exact_and_keyed():
    t = torch.randn(100)
    a, b = fingerprint(t, 5), fingerprint(t.clone(), 5)
    assert a == b
    assert fingerprint(t, 6)["samples"] != a["samples"]
    u = t.clone()
    u[3] += 1.0
    assert fingerprint(u, 5)["sum"] != a["sum"]
    n = torch.tensor([1.0, float("nan"), float("inf")])
    f = fingerprint(n, 0)
    assert f["nan"] == 1 and f["inf"] == 1 and f["sum"] == 1.0
    assert fingerprint(torch.tensor([3, 1], dtype=torch.int64), 0)["sum"] == 4.0


def clean_reference(task, **kw):
    w = Worker()
    try:
        r = w.call("reference", task=data(task), seeds=[11, 12], fp_key=7, **kw)
        assert r["ok"], r
        return r
    finally:
        w.close()


def fps(check):
    return check["input_fp"], check["ref_fp"], check["ref64_fp"]


def test_a_clean_process_computes_the_same_reference():
    clean = clean_reference("relu_rand.py", distributions=["signed"])
    assert [(c["seed"], c["distribution"]) for c in clean["checks"]] == [(11, "task"), (12, "task"),
                                                                          (11, "signed")]
    assert all(c["finite"] for c in clean["checks"])
    w = Worker()
    try:
        r = evaluate(w, "relu_rand.py", hybrid("relu_ok_any.py"), distributions=["signed"], fp_key=7)
        assert r["ok"], r
        for mine, theirs in zip(r["checks"], clean["checks"]):
            assert fps(mine) == fps(theirs)
    finally:
        w.close()


def test_a_candidate_that_changes_the_reference_changes_its_fingerprints():
    clean = clean_reference("relu_sized.py")
    w = Worker()
    try:
        r = evaluate(w, "relu_sized.py", hybrid("adv_patch_reference.py"), fp_key=7)
        assert r["ok"], r
        # In its own process the cheat agrees with the reference it changed...
        assert worst64(r["checks"][0]) == 0
        # ...but not with the clean process's.
        assert r["checks"][0]["input_fp"] == clean["checks"][0]["input_fp"]
        assert r["checks"][0]["ref_fp"] != clean["checks"][0]["ref_fp"]
    finally:
        w.close()


def test_the_reference_probe_after_timing():
    clean = clean_reference("relu_sized.py")
    w = Worker()
    try:
        r = w.call("time", task=data("relu_sized.py"), candidate=hybrid("adv_slow_reference.py"),
                   probe={"seed": 11, "fp_key": 7},
                   timing={"contenders": ["candidate", "eager"], "max_seconds": 0.2, "min_reps": 6,
                           "warmup_ms": 5, "energy": False})
        assert r["ok"], r
        assert r["ref_probe"]["ref_fp"] == clean["checks"][0]["ref_fp"]
        # The slowed Model: eager takes the 2 ms busy wait in this process.
        eager = sorted(r["samples"]["eager"]["host_ms"])
        assert eager[len(eager) // 2] >= 2.0
    finally:
        w.close()
