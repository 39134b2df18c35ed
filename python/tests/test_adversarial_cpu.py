"""Cheating hybrid candidates against the cpu worker: the worker must report
the facts the verdict (src/run/verdict.cc) rejects them on. The CUDA cheats in
tests/adversarial/ need a GPU; these are the ones a cpu can show."""

import time

import torch

from conftest import data

TIMING = {"contenders": ["candidate"], "warmup_ms": 1, "min_reps": 6, "max_reps": 12, "max_seconds": 2,
          "energy": False, "flush_l2": False, "batch": 3}


def hybrid(name):
    return {"kind": "hybrid", "path": data(name)}


def evaluate(worker, cand, timing=None, seeds=(11, 12)):
    r = worker.call("evaluate", task=data("linear_relu.py"), candidate=hybrid(cand), seeds=list(seeds),
                    kernelbench_tol={"atol": 1e-4, "rtol": 1e-4}, fp64=True, timing=timing)
    assert r["ok"], r
    return r


def test_honest_candidate_reports_nothing(worker):
    r = evaluate(worker, "linear_relu_ok.py", timing=TIMING)
    assert r["tampered"] == [] and r["timing"]["tampered"] == []
    first = r["checks"][0]["outputs"][0]
    assert first["exact_tensor"] is True
    assert first["rerun_rel_diff"] == 0.0  # deterministic: the same bits twice
    assert "rerun_rel_diff" not in r["checks"][1]["outputs"][0]  # one seed re-runs
    null = r["timing"]["null_host_ms"]
    assert len(null) >= 3 and all(0 <= v < 5 for v in null)


def test_patching_synchronize_at_import_is_reported_and_undone(worker):
    r = evaluate(worker, "adv_patch_sync.py")
    assert "torch.cuda.synchronize" in r["tampered"]
    # Restored for the next request: an honest candidate sees no tampering.
    assert evaluate(worker, "linear_relu_ok.py")["tampered"] == []
    assert not getattr(torch.cuda.synchronize, "__name__", "") == "<lambda>"


def test_patching_clocks_and_events_is_reported_and_cannot_fake_the_time(worker):
    r = evaluate(worker, "adv_patch_clock.py", timing=TIMING)
    for name in ("time.perf_counter", "time.perf_counter_ns", "torch.cuda.Event.elapsed_time"):
        assert name in r["tampered"], r["tampered"]
        assert name in r["timing"]["tampered"]
    # The timer used the clocks saved at start-up: real, non-zero host times.
    host = r["timing"]["samples"]["candidate"]["host_ms"]
    assert host and all(v > 0 for v in host)
    assert r["checks"][0]["candidate_ms"] > 0
    t = worker.call("time", task=data("linear_relu.py"), candidate=hybrid("adv_patch_clock.py"), timing=TIMING)
    assert t["ok"] and "time.perf_counter_ns" in t["tampered"]
    assert evaluate(worker, "linear_relu_ok.py")["tampered"] == []


def test_tensor_subclass_output_is_not_exact(worker):
    r = evaluate(worker, "adv_lazy_subclass.py")
    for c in r["checks"]:
        out = c["outputs"][0]
        assert out["exact_tensor"] is False
        assert out["shape_ok"] and out["vs_ref64"]["rel_l2"] < 1e-5  # the values themselves are right


def test_output_that_changes_between_runs_shows_in_the_rerun(worker):
    r = evaluate(worker, "adv_flaky.py")
    first = r["checks"][0]["outputs"][0]
    assert first["vs_ref64"]["rel_l2"] < 1e-5  # the checked runs look right
    assert r["checks"][1]["outputs"][0]["vs_ref64"]["rel_l2"] < 1e-5
    assert first["rerun_rel_diff"] > 0.1  # the second run on the same inputs does not


def test_existing_defences_still_report(worker):
    # Return the input / mutate inputs / NaN: the facts the verdict uses.
    r = evaluate(worker, "linear_relu_mutates.py")
    assert any(c["inputs_mutated"] for c in r["checks"])
    r = evaluate(worker, "linear_relu_alias.py")
    assert any(o["aliases_input"] for c in r["checks"] for o in c["outputs"])


def test_timed_calls_are_audited_against_the_reference(worker):
    r = evaluate(worker, "linear_relu_ok.py", timing=TIMING)
    audit = r["timing"]["timing_audit"]
    assert audit is not None and audit["outputs"][0]["vs_ref64"]["rel_l2"] < 1e-5
    # A result replayed by input address is stale once the contents changed.
    r = evaluate(worker, "adv_cache_pointer.py", timing=TIMING)
    out = r["timing"]["timing_audit"]["outputs"][0]
    assert out["vs_ref64"]["rel_l2"] > 1e-4, out


def test_inputs_change_between_timed_calls(tmp_path):
    from conftest import Worker

    log = tmp_path / "cache.log"
    w = Worker(env={"KOPT_TEST_CACHE_LOG": str(log)})
    try:
        timing = dict(TIMING, warmup_ms=0)
        t = w.call("time", task=data("linear_relu.py"), candidate=hybrid("adv_cache_content.py"), timing=timing)
        assert t["ok"], t
        n = len(t["samples"]["candidate"]["host_ms"])
        lines = log.read_text().split()
        # Warm-up (2 calls: the first plus one more) may hit; every timed call misses.
        assert lines.count("miss") >= n and lines.count("hit") <= 2, lines
        assert t["timing_audit"]["outputs"][0]["vs_ref64"]["rel_l2"] < 1e-5
        log.write_text("")
        t = w.call("time", task=data("linear_relu.py"), candidate=hybrid("adv_cache_content.py"),
                   timing=dict(timing, refresh_inputs=False))
        assert log.read_text().split().count("hit") >= n  # without the refresh the cache wins
    finally:
        w.close()


def test_patching_kopt_itself_is_reported(worker):
    r = evaluate(worker, "adv_patch_harness.py", timing=TIMING)
    assert "kopt.integrity.ORIG.synchronize" in r["tampered"], r["tampered"]
    assert "kopt.device.Device.timer" in r["tampered"]
    host = r["timing"]["samples"]["candidate"]["host_ms"]
    assert host and all(v > 1e-5 for v in host)  # the real timer ran
    assert evaluate(worker, "linear_relu_ok.py")["tampered"] == []


def test_state_the_forward_writes_must_be_written_alike(worker):
    # BatchNorm in training mode updates its running statistics: an honest
    # hybrid updates them as the reference does, in every check (each starts
    # from the same state); one that skips the update has the right output
    # but is reported, tensor by tensor.
    def run(cand):
        r = worker.call("evaluate", task=data("batchnorm.py"), candidate=hybrid(cand), seeds=[11, 12],
                        kernelbench_tol={"atol": 1e-4, "rtol": 1e-4}, fp64=True, timing=None)
        assert r["ok"], r
        return r

    ok = run("batchnorm_ok.py")
    for c in ok["checks"]:
        names = {s["name"] for s in c["state"]}
        assert names == {"bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}, c["state"]
        assert all(s["ok"] for s in c["state"]), c["state"]
        assert not c["inputs_mutated"]
    bad = run("batchnorm_no_running.py")
    for c in bad["checks"]:
        assert c["outputs"][0]["vs_ref64"]["rel_l2"] < 1e-5  # the output itself is right
        by = {s["name"]: s for s in c["state"]}
        assert not by["bn.running_mean"]["ok"] and by["bn.running_mean"]["unchanged"]
        assert not by["bn.num_batches_tracked"]["ok"]
    # A forward that writes no state has nothing to compare.
    r = evaluate(worker, "linear_relu_ok.py")
    assert all(c["state"] == [] for c in r["checks"])
