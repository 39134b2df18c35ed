"""Drives the real worker (`python3 -m kopt.worker --device cpu`) over its protocol."""

import math

import pytest
import torch

from conftest import Worker, data

SENTINEL = 1e300


def hybrid(name):
    return {"kind": "hybrid", "path": data(name)}


def evaluate(worker, task, cand, seeds=(11, 12), **kw):
    return worker.call("evaluate", task=data(task), candidate=cand, seeds=list(seeds),
                       kernelbench_tol={"atol": 1e-4, "rtol": 1e-4}, fp64=True, timing=None, **kw)


def test_ready_and_hello(worker):
    assert worker.ready["event"] == "ready"
    assert worker.ready["pid"] == worker.proc.pid
    r = worker.call("hello")
    assert r["ok"] is True
    assert r["torch"] == torch.__version__
    dev = r["device"]
    assert dev["name"] == "cpu" and dev["available"] is False
    assert dev["cc"] == [0, 0]
    for key in ("sm_count", "l2_bytes", "memory_bytes", "max_sm_clock_mhz", "max_mem_clock_mhz"):
        assert key in dev


def test_unknown_op_and_bad_json(worker):
    r = worker.call("frobnicate")
    assert r["ok"] is False
    assert r["error"]["kind"] == "bad_request" and r["error"]["fatal"] is False
    worker.send_raw("{not json")
    r = worker.read()
    assert r["id"] is None and r["error"]["kind"] == "bad_request"
    assert worker.call("hello")["ok"]


def test_capture_linear_relu(worker):
    r = worker.call("capture", task=data("linear_relu.py"), seeds=[0, 1, 2], profile=True)
    assert r["ok"], r
    sig = r["signature"]
    assert [(t["name"], t["role"]) for t in sig["inputs"]] == [
        ("x", "input"), ("linear.weight", "param"), ("linear.bias", "param")]
    assert sig["inputs"][0]["shape"] == [8, 32] and sig["inputs"][0]["strides"] == [32, 1]
    assert sig["inputs"][1]["shape"] == [16, 32] and sig["inputs"][1]["dtype"] == "float32"
    assert sig["outputs"] == [{"name": "out0", "role": "output", "shape": [8, 16], "dtype": "float32",
                               "strides": [16, 1]}]
    assert sig["n_forward_inputs"] == 1
    assert sig["training"] is True  # KernelBench does not call .eval()
    assert sig["module_types"] == ["Linear"]
    assert len(r["outputs_stats"]) == 3 and len(r["outputs_stats"][0]) == 1
    st = r["outputs_stats"][0][0]
    assert st["numel"] == 128 and st["nan"] == 0 and st["inf"] == 0 and st["max_abs"] > 0
    assert r["seed_rel_diff"][0] > 0.1
    assert r["repeat_rel_diff"] == [0.0]
    assert r["repeat_same_seed_rel_diff"] == [0.0]
    err = r["ref_error"][0]
    assert 0 <= err["max_abs"] < 1e-5 and 0 <= err["rel_l2"] < 1e-5 and err["ref64_max_abs"] > 0
    g = r["graph"]
    addmm = [n for n in g["nodes"] if n["op"] == "aten::addmm"]
    assert len(addmm) == 1 and addmm[0]["flops"] == 2 * 8 * 16 * 32
    assert addmm[0]["out_shapes"] == [[8, 16]] and addmm[0]["dtype"] == "float32"
    assert g["flops_by_class"]["matrix"] == 2 * 8 * 16 * 32
    assert g["flops_by_class"]["other"] >= 128  # relu: one flop per output element
    assert g["flops"] == g["flops_by_class"]["matrix"] + g["flops_by_class"]["other"]
    assert r["min_bytes"] == 4 * (8 * 32 + 16 * 32 + 16 + 8 * 16)
    assert r["kernels"] == []


def test_capture_tuple_output_and_scalar_arg(worker):
    r = worker.call("capture", task=data("tuple_out.py"), seeds=[0, 1])
    assert r["ok"], r
    sig = r["signature"]
    assert sig["n_forward_inputs"] == 2
    assert sig["inputs"][1] == {"name": "scale", "role": "scalar", "shape": [], "dtype": "float64", "strides": []}
    assert [(o["shape"], o["dtype"]) for o in sig["outputs"]] == [([4], "float32"), ([4], "int64")]
    assert len(r["seed_rel_diff"]) == 2 and len(r["repeat_rel_diff"]) == 2
    assert r["ref_error"] is not None and len(r["ref_error"]) == 2
    assert r["ref_error"][1]["max_abs"] == 0.0  # argmax agrees in float64


def test_capture_batchnorm_training(worker):
    r = worker.call("capture", task=data("batchnorm.py"), seeds=[0, 1])
    assert r["ok"], r
    sig = r["signature"]
    assert sig["training"] is True and sig["module_types"] == ["BatchNorm2d"]
    roles = [(t["name"], t["role"], t["dtype"]) for t in sig["inputs"]]
    assert roles == [("x", "input", "float32"), ("bn.weight", "param", "float32"), ("bn.bias", "param", "float32"),
                     ("bn.running_mean", "buffer", "float32"), ("bn.running_var", "buffer", "float32"),
                     ("bn.num_batches_tracked", "buffer", "int64")]
    assert r["repeat_rel_diff"] == [0.0]
    st = r["outputs_stats"][0][0]
    assert abs(st["mean"]) < 1e-5 and abs(st["std"] - 1) < 1e-2  # batch statistics were used


def test_capture_dropout_is_detected_as_stochastic(worker):
    # repeat_rel_diff reruns identical inputs under a different RNG seed, so a
    # stochastic reference shows up; with the same seed it is reproducible.
    r = worker.call("capture", task=data("dropout.py"), seeds=[0, 1])
    assert r["ok"], r
    assert r["repeat_rel_diff"][0] > 0.5
    assert r["repeat_same_seed_rel_diff"] == [0.0]


def test_evaluate_correct_hybrid(worker):
    r = evaluate(worker, "linear_relu.py", hybrid("linear_relu_ok.py"), seeds=[11, 12, 13])
    assert r["ok"], r
    assert r["weights_copied"] is True and r["load_ms"] >= 0
    assert [c["seed"] for c in r["checks"]] == [11, 12, 13]
    assert [c["order"] for c in r["checks"]] == ["candidate_first", "reference_first", "candidate_first"]
    for c in r["checks"]:
        assert c["inputs_mutated"] is False and c["mutated_inputs"] == []
        assert c["candidate_ms"] >= 0
        (o,) = c["outputs"]
        assert o["shape"] == [8, 16] and o["dtype"] == "float32"
        assert o["shape_ok"] and o["dtype_ok"] and o["nan"] == 0 and o["inf"] == 0
        assert o["poison_left"] == 0 and o["aliases_input"] is False
        assert o["vs_ref32"]["worst_ratio"] <= 1.0 and o["vs_ref32"]["max_abs"] < 1e-5
        assert o["vs_ref64"]["rel_l2"] < 1e-5 and o["ref32_vs_ref64"]["rel_l2"] < 1e-5
        assert o["ref_max_abs"] > 0
    assert "timing" not in r


def test_evaluate_wrong_hybrid(worker):
    r = evaluate(worker, "linear_relu.py", hybrid("linear_relu_wrong.py"))
    assert r["ok"], r
    o = r["checks"][0]["outputs"][0]
    assert o["shape_ok"] and o["dtype_ok"]
    assert abs(o["vs_ref32"]["max_abs"] - 1.0) < 1e-5
    assert o["vs_ref32"]["worst_ratio"] > 1000
    assert o["vs_ref64"]["max_abs"] > 0.99 and o["vs_ref32"]["rel_l2"] > 0.5


def test_evaluate_input_mutation(worker):
    r = evaluate(worker, "linear_relu.py", hybrid("linear_relu_mutates.py"))
    assert r["ok"], r
    for c in r["checks"]:
        assert c["inputs_mutated"] is True and c["mutated_inputs"] == ["x"]
        # The reference ran on its own pristine copy, so the answer still matches.
        assert c["outputs"][0]["vs_ref32"]["max_abs"] < 1e-5


def test_evaluate_candidate_raises(worker):
    r = evaluate(worker, "linear_relu.py", hybrid("linear_relu_raises.py"))
    assert r["ok"] is False
    assert r["error"]["kind"] == "candidate_error" and r["error"]["fatal"] is False
    assert "kernel not implemented" in r["error"]["message"]
    assert worker.call("hello")["ok"]  # still serving


def test_evaluate_not_a_task(worker):
    r = evaluate(worker, "not_a_task.py", hybrid("linear_relu_ok.py"))
    assert r["ok"] is False and r["error"]["kind"] == "task_load"
    r = evaluate(worker, "does_not_exist.py", hybrid("linear_relu_ok.py"))
    assert r["ok"] is False and r["error"]["kind"] == "task_load"


def test_evaluate_bad_candidates(worker):
    r = evaluate(worker, "linear_relu.py", hybrid("not_a_task.py"))  # no ModelNew
    assert r["ok"] is False and r["error"]["kind"] == "candidate_load"
    r = evaluate(worker, "linear_relu.py", hybrid("missing_candidate.py"))
    assert r["ok"] is False and r["error"]["kind"] == "candidate_load"
    r = evaluate(worker, "linear_relu.py", {"kind": "cuda", "so": "/nonexistent.so"})
    assert r["ok"] is False and r["error"]["kind"] == "candidate_load"  # no such file
    r = evaluate(worker, "linear_relu.py", {"kind": "triton"})
    assert r["ok"] is False and r["error"]["kind"] == "bad_request"


def test_stray_prints_do_not_corrupt_the_stream(worker):
    before = len(worker.raw_lines)
    r = evaluate(worker, "linear_relu.py", hybrid("linear_relu_noisy.py"))
    assert r["ok"], r
    assert r["checks"][0]["outputs"][0]["vs_ref32"]["max_abs"] < 1e-5
    # Exactly one line came back on the protocol stream, and no forged reply.
    assert len(worker.raw_lines) == before + 1
    assert "forged" not in worker.raw_lines[-1]
    err = worker.stderr_text()
    assert "forward noise" in err and "raw fd 1 noise" in err and "forged" in err


def test_nan_outputs_are_json_safe(worker):
    r = evaluate(worker, "linear_relu.py", hybrid("linear_relu_nan.py"))
    assert r["ok"], r
    line = worker.raw_lines[-1]
    assert "NaN" not in line and "Infinity" not in line
    o = r["checks"][0]["outputs"][0]
    assert o["nan"] == 1 and o["inf"] == 1
    assert o["vs_ref32"] == {"max_abs": SENTINEL, "rel_l2": SENTINEL, "worst_ratio": SENTINEL}
    assert o["vs_ref64"]["max_abs"] == SENTINEL


def test_output_aliasing_input(worker):
    r = evaluate(worker, "linear_relu.py", hybrid("linear_relu_alias.py"))
    assert r["ok"], r
    o = r["checks"][0]["outputs"][0]
    assert o["aliases_input"] is True
    assert o["shape"] == [8, 16] and o["shape_ok"] is True  # x[:, :16] happens to have the right shape
    assert o["vs_ref32"]["max_abs"] > 0


def test_evaluate_tuple_outputs(worker):
    r = evaluate(worker, "tuple_out.py", hybrid("tuple_out_ok.py"))
    assert r["ok"], r
    c = r["checks"][0]
    assert c["n_outputs"] == 2 and len(c["outputs"]) == 2
    f, i = c["outputs"]
    assert f["dtype"] == "float32" and f["vs_ref32"]["worst_ratio"] <= 1
    assert i["dtype"] == "int64" and i["dtype_ok"] and i["vs_ref32"]["max_abs"] == 0


def test_evaluate_dropout_reproducible_by_seeding(worker):
    r = evaluate(worker, "dropout.py", hybrid("dropout_ok.py"))
    assert r["ok"], r
    for c in r["checks"]:
        assert c["outputs"][0]["vs_ref32"]["max_abs"] == 0.0


def test_time_op(worker):
    contenders = ["candidate", "eager"]
    if not hasattr(torch, "compile"):
        contenders.append("compile")  # reported as an error entry, not a failed request
    r = worker.call("time", task=data("linear_relu.py"), candidate=hybrid("linear_relu_ok.py"),
                    timing={"contenders": contenders, "warmup_ms": 5, "min_reps": 10, "max_reps": 50,
                            "max_seconds": 1.0, "target_rel_ci": 0.5, "energy": True})
    assert r["ok"], r
    for who in ("candidate", "eager"):
        s = r["samples"][who]
        assert "error" not in s
        assert 10 <= len(s["host_ms"]) <= 50 and all(x > 0 for x in s["host_ms"])
        assert s["event_ms"] == []  # no CUDA events on cpu
    if "compile" in contenders:
        assert "error" in r["samples"]["compile"]
    assert r["energy"] is None
    assert r["load_ms"] >= 0
    assert r["meta"]["clock"] == "host" and r["meta"]["stop"] in ("ci", "max_reps", "max_seconds")


def test_time_baselines_without_candidate(worker):
    r = worker.call("time", task=data("batchnorm.py"), candidate=None,
                    timing={"contenders": ["eager"], "warmup_ms": 1, "min_reps": 5, "max_reps": 10,
                            "energy": False})
    assert r["ok"], r
    assert list(r["samples"]) == ["eager"] and len(r["samples"]["eager"]["host_ms"]) >= 5


def test_evaluate_with_timing(worker):
    r = worker.call("evaluate", task=data("linear_relu.py"), candidate=hybrid("linear_relu_ok.py"),
                    seeds=[1], timing={"contenders": ["candidate", "eager"], "warmup_ms": 1, "min_reps": 5,
                                       "max_reps": 10, "max_seconds": 0.5})
    assert r["ok"], r
    assert len(r["checks"]) == 1
    assert set(r["timing"]["samples"]) == {"candidate", "eager"}
    assert len(r["timing"]["samples"]["candidate"]["host_ms"]) >= 5


def test_ceilings_cpu(worker):
    r = worker.call("ceilings", seconds=0.5)
    assert r["ok"], r
    probes = {p["probe"]: p for p in r["bandwidth"]}
    for name in ("copy_", "fill_", "sum", "add"):
        assert probes[name]["bytes_per_s"] > 0
    mm = {p["probe"]: p for p in r["matmul"]}
    assert mm["sgemm_fp32"]["flops_per_s"] > 0 and mm["sgemm_fp32"]["dtype"] == "float32"


def test_shutdown_exits_zero():
    w = Worker()
    try:
        r = w.call("shutdown")
        assert r["ok"] is True
        assert w.proc.wait(timeout=10) == 0
    finally:
        w.close()


def test_eof_exits_zero():
    w = Worker()
    w.proc.stdin.close()
    assert w.proc.wait(timeout=10) == 0


def test_candidate_cannot_change_global_state_or_exit(worker):
    r = evaluate(worker, "linear_relu.py", hybrid("linear_relu_globals.py"))
    assert r["ok"] is False and r["error"]["kind"] == "candidate_error"
    assert "SystemExit" in r["error"]["message"]
    # The default dtype was put back: a task's get_inputs() makes float32 again.
    r = worker.call("capture", task=data("tuple_out.py"), seeds=[3, 4])
    assert r["ok"], r
    assert r["signature"]["inputs"][0]["dtype"] == "float32"
