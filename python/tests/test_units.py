"""In-process unit tests of the worker's helpers."""

import math

import torch

from kopt import checks, timing
from kopt.errors import CandidateRunError, classify
from kopt.tasks import poison_left, poison_like
from kopt.worker import sanitize


def test_compare_stats():
    b = torch.tensor([1.0, -2.0, 4.0])
    a = b + torch.tensor([0.0, 0.5, 0.0])
    s = checks.compare(a, b, atol=0.1, rtol=0.1)
    assert s["max_abs"] == 0.5
    assert math.isclose(s["rel_l2"], 0.5 / math.sqrt(21))
    assert math.isclose(s["worst_ratio"], 0.5 / (0.1 + 0.2))
    # NaN on both sides at the same place is equal; on one side it poisons the stats.
    nan = float("nan")
    assert checks.compare(torch.tensor([nan, 1.0]), torch.tensor([nan, 1.0]), 0.0, 0.0)["max_abs"] == 0.0
    s = checks.compare(torch.tensor([nan, 1.0]), torch.tensor([0.0, 1.0]), 1e-4, 1e-4)
    assert all(math.isnan(v) for v in s.values())
    assert checks.compare(torch.tensor([math.inf]), torch.tensor([1.0]))["max_abs"] == math.inf


def test_value_stats_finite_only():
    s = checks.value_stats(torch.tensor([1.0, 3.0, float("nan"), float("inf")]))
    assert s == {"mean": 2.0, "std": 1.0, "max_abs": 3.0, "numel": 4, "nan": 1, "inf": 1}


def test_poison_patterns():
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        t = poison_like((3, 2), dtype, "cpu")
        assert torch.isnan(t).all() and poison_left(t) == 6
        t[0, 0] = 1.0
        t[1, 0] = float("nan")  # a computed NaN is not the poison pattern
        assert poison_left(t) == 4
    t = poison_like((4,), torch.int64, "cpu")
    assert (t == torch.iinfo(torch.int64).min).all() and poison_left(t) == 4
    t = poison_like((4,), torch.bool, "cpu")
    assert poison_left(t) == 4
    t[1] = True
    t[2] = False
    assert poison_left(t) == 2


def test_sanitize():
    out = sanitize({"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5], "c": torch.tensor(2.5),
                    "d": (1, 2)})
    assert out == {"a": 1e300, "b": [1e300, -1e300, 1.5], "c": 2.5, "d": [1, 2]}


def test_median_ci():
    assert timing.median_ci_rel([1.0] * 5) == math.inf  # too few samples
    assert timing.median_ci_rel([1.0] * 50) == 0.0
    assert 0 < timing.median_ci_rel([1.0 + 0.01 * (i % 7) for i in range(100)]) < 0.05


def test_median_interval_matches_the_shared_fixture():
    # The same cases core_test.cc checks against src/core/stats.cc, the rule's home.
    import json
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "stats", "intervals.json")
    with open(path) as f:
        cases = json.load(f)["cases"]
    assert cases
    for c in cases:
        assert timing.median_interval(c["samples"]) == (c["median"], c["low"], c["high"]), c["name"]
        n = len(c["samples"])
        assert timing.median_interval_ranks(n) == (c["low_rank"] - 1, c["high_rank"] - 1), c["name"]


def test_classify():
    assert classify(RuntimeError("CUDA error: an illegal memory access was encountered")) == ("cuda_error", True)
    assert classify(RuntimeError("CUDA out of memory. Tried to allocate")) == ("oom", False)
    inner = RuntimeError("CUDA error: device-side assert triggered")
    assert classify(CandidateRunError("candidate raised", inner)) == ("cuda_error", True)
    assert classify(CandidateRunError("candidate raised", ValueError("x"))) == ("candidate_error", False)
    assert classify(KeyError("x")) == ("internal", False)


def test_cudnn_rnn_flops_match_the_decomposed_lstm():
    """On a GPU nn.LSTM is one opaque aten::_cudnn_rnn; on the CPU it
    decomposes into mm/addmm per step. kopt's rule for the fused op must give
    the matrix FLOPs the decomposition counts (projection and GRU too)."""
    from kopt import capture

    def decomposed(module, x):
        rec = capture.GraphRecorder()
        with rec:
            module(x)
        return sum(n["flops"] for n in rec.nodes if n["class"] == "matrix")

    torch.manual_seed(0)
    cases = [
        (torch.nn.LSTM(16, 32, num_layers=2, batch_first=True), torch.randn(4, 10, 16), 2),
        (torch.nn.LSTM(16, 32, num_layers=1, proj_size=8), torch.randn(10, 4, 16), 2),
        (torch.nn.GRU(16, 24, num_layers=2, bidirectional=True), torch.randn(7, 3, 16), 3),
    ]
    for module, x, mode in cases:
        proj = getattr(module, "proj_size", 0)
        args = [x, [], 0, None, None, None, mode, module.hidden_size, proj, module.num_layers,
                module.batch_first, 0.0, False, module.bidirectional, []]
        assert capture._cudnn_rnn_flops(args, {}) == decomposed(module, x), module
    assert capture.is_matrix_op("_cudnn_rnn")
