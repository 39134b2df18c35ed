"""The worker on a CUDA device: cuda candidates through the ABI, poison,
fatal CUDA errors, profiler kernels, events, energy, ceilings.

Skipped without a GPU (CI); run on a GPU machine with
`PYTHONPATH=python python3 -m pytest -q python/tests/test_gpu.py`."""

import os

import pytest
import torch

import kopt
from conftest import DATA, Worker, data

pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or kopt.kopt_binary() is None,
                                reason="needs a CUDA device and the kopt binary (KOPT_BIN)")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("so"))


@pytest.fixture(scope="module")
def gpu_worker(cache):
    w = Worker("cuda:0", env={"KOPT_CACHE": cache})
    yield w
    w.close()


def build(cache, name, defines=()):
    os.environ["KOPT_CACHE"] = cache
    with open(os.path.join(DATA, name)) as f:
        src = f.read()
    return kopt.load_cuda(src, name=name.replace(".", "_"), extra_cflags=[f"-D{d}" for d in defines]).path


def cuda_cand(path):
    return {"kind": "cuda", "so": path}


def evaluate(w, task, cand, seeds=(11, 12), **kw):
    return w.call("evaluate", task=data(task), candidate=cand, seeds=list(seeds),
                  kernelbench_tol={"atol": 1e-4, "rtol": 1e-4}, fp64=True, timing=kw.pop("timing", None), **kw)


def test_hello_cuda(gpu_worker):
    r = gpu_worker.call("hello")
    d = r["device"]
    assert d["available"] is True and d["sm_count"] > 0 and d["l2_bytes"] > 0 and d["memory_bytes"] > 0
    assert list(torch.cuda.get_device_capability()) == d["cc"]
    assert r["cuda"] == torch.version.cuda


def test_capture_has_kernels(gpu_worker):
    r = gpu_worker.call("capture", task=data("linear_relu.py"), seeds=[0, 1, 2], profile=True)
    assert r["ok"], r
    assert r["kernels"], r
    assert all(k["calls"] > 0 and k["device_ms"] >= 0 for k in r["kernels"])
    assert r["graph"]["flops_by_class"]["matrix"] == 2 * 8 * 16 * 32


def test_cuda_candidate_correct(gpu_worker, cache):
    so = build(cache, "linear_relu.cu")
    r = evaluate(gpu_worker, "linear_relu.py", cuda_cand(so), seeds=[11, 12, 13])
    assert r["ok"], r
    for c in r["checks"]:
        o = c["outputs"][0]
        assert o["poison_left"] == 0 and o["nan"] == 0
        assert o["vs_ref32"]["worst_ratio"] < 1.0, o
        assert c["inputs_mutated"] is False


def test_cuda_candidate_unwritten_output(gpu_worker, cache):
    so = build(cache, "linear_relu.cu", ["KOPT_HALF_WRITE"])
    r = evaluate(gpu_worker, "linear_relu.py", cuda_cand(so))
    assert r["ok"], r
    o = r["checks"][0]["outputs"][0]
    assert o["poison_left"] == 64 and o["nan"] == 64


def test_cuda_candidate_error_code(gpu_worker, cache):
    so = build(cache, "returns_code.cu")
    r = evaluate(gpu_worker, "linear_relu.py", cuda_cand(so))
    assert r["ok"] is False and r["error"]["kind"] == "candidate_error" and not r["error"]["fatal"]
    assert "42" in r["error"]["message"]


def test_hybrid_with_load_cuda(gpu_worker):
    r = evaluate(gpu_worker, "linear_relu.py", {"kind": "hybrid", "path": data("linear_relu_loadcuda.py")})
    assert r["ok"], r
    assert r["checks"][0]["outputs"][0]["vs_ref32"]["worst_ratio"] < 1.0


def test_time_cuda(gpu_worker, cache):
    so = build(cache, "linear_relu.cu")
    r = gpu_worker.call("time", task=data("linear_relu.py"), candidate=cuda_cand(so),
                        timing={"contenders": ["candidate", "eager", "compile"], "warmup_ms": 20,
                                "min_reps": 20, "max_reps": 200, "max_seconds": 2.0, "energy": True})
    assert r["ok"], r
    for who in ("candidate", "eager"):
        s = r["samples"][who]
        assert len(s["event_ms"]) == len(s["host_ms"]) >= 20
    assert "compile" in r["samples"]
    assert r["meta"]["clock"] == "event" and r["meta"]["flush_bytes"] > 0
    # The head start spins the GPU ahead of the flush: an empty call's host
    # time holds it (at a lower clock the spin only lasts longer).
    head = r["meta"]["head_start_us"] / 1000.0
    assert head > 0 and sorted(r["null_host_ms"])[len(r["null_host_ms"]) // 2] >= 0.9 * head
    if r["energy"] is not None:
        e = r["energy"]["candidate"]
        assert e["calls"] > 0 and e["window_s"] >= 0.5


def test_timer_bridges_the_host_gap():
    """Device.timer hands the bridge about the host's gap between calls
    (x1.2), and the bridge's reads keep the GPU busy over it: a 2 ms host
    gap bridged takes ~2 ms of GPU time, and neither clock of the next call
    holds it."""
    from kopt import integrity
    from kopt.device import Device
    from kopt.timing import _bridge
    import time

    integrity.install()  # the references the timer uses, saved as the worker saves them
    dev = Device("cuda:0")
    flush = torch.zeros(2 * dev.l2_bytes() // 4, device=dev.torch_device)
    asked = []
    real = _bridge(flush, dev)

    def bridge(us):
        asked.append(us)
        real(us)

    timer = dev.timer(bridge=bridge)
    x = torch.randn(1 << 20, device=dev.torch_device)
    events = []
    for _ in range(12):
        ev, host, _ = timer(lambda: x * 2)
        events.append(ev)
        time.sleep(0.002)
    assert len(asked) == 12
    assert 1800 < asked[-1] < 3600, asked  # 1.2 x the ~2 ms gap, learned
    assert max(events[4:]) < 1.0, events  # the bridge is outside the timed window
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    real(2000.0)
    e.record()
    e.synchronize()
    assert 1.0 < s.elapsed_time(e) < 4.0, s.elapsed_time(e)


def test_ceilings_cuda(gpu_worker):
    r = gpu_worker.call("ceilings", seconds=2)
    assert r["ok"], r
    probes = {p["probe"]: p for p in r["bandwidth"]}
    assert probes["copy_"]["bytes_per_s"] > 1e11
    assert probes["vec_copy"]["bytes_per_s"] > 1e11, probes["vec_copy"]
    mm = {p["probe"]: p for p in r["matmul"]}
    assert mm["bf16"]["flops_per_s"] > mm["sgemm_fp32"]["flops_per_s"]


def test_illegal_address_is_fatal(cache):
    so = build(cache, "illegal.cu")
    w = Worker("cuda:0", env={"KOPT_CACHE": cache})
    try:
        r = evaluate(w, "linear_relu.py", cuda_cand(so), seeds=[11])
        assert r["ok"] is False and r["error"]["kind"] == "cuda_error" and r["error"]["fatal"] is True
        assert w.proc.wait(timeout=30) == 3
    finally:
        w.close()
