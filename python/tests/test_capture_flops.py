"""Capture says which operators it charged no FLOPs for, instead of counting
them as zero in silence (CPU)."""

import torch

from conftest import data
from kopt import capture


def record(fn, *args):
    rec = capture.GraphRecorder()
    with rec:
        fn(*args)
    return rec


def test_ops_without_a_rule_are_listed_and_zero_flop_ops_are_not():
    x = torch.randn(8, 16)
    rec = record(lambda t: torch.sort(torch.relu(t), dim=1)[0].flip(1)[:, :4].contiguous() + t[:, :4], x)
    assert sorted(rec.uncounted) == ["aten::sort"], rec.uncounted
    ops = {n["op"] for n in rec.nodes}
    assert {"aten::relu", "aten::flip", "aten::add"} <= ops
    # Data movement is zero by rule, arithmetic has its count.
    flops = {n["op"]: n["flops"] for n in rec.nodes}
    assert flops["aten::flip"] == 0 and flops["aten::relu"] == 8 * 16 and flops["aten::add"] == 8 * 4


def test_capture_reply_lists_uncounted_ops(worker):
    r = worker.call("capture", task=data("uncounted_ops.py"), seeds=[0, 1], profile=False)
    assert r["ok"], r
    assert r["uncounted_ops"] == ["aten::sort"], r["uncounted_ops"]
    assert "uncounted_ops" not in r["graph"]


def test_fully_counted_task_lists_none(worker):
    r = worker.call("capture", task=data("linear_relu.py"), seeds=[0, 1], profile=False)
    assert r["ok"], r
    assert r["uncounted_ops"] == [], r["uncounted_ops"]


def test_a_storage_argument_is_recorded_by_its_size_not_its_elements():
    # `set_` on a storage (an LSTM's flat weights on CUDA): its str prints
    # every element, one device read each on a GPU (minutes for the LSTM).
    x = torch.randn(1 << 20)
    rec = record(lambda t: torch.empty(0).set_(getattr(t, "untyped_storage", t.storage)(), 0, (1 << 20,), (1,)) * 2, x)
    node = next(n for n in rec.nodes if n["op"] == "aten::set_")
    storage_args = [a for a in node["args"] if isinstance(a, dict) and "storage" in a]
    assert storage_args == [{"storage": 4 << 20}], node["args"]
    assert len(str(node["args"])) < 200
