"""The contract's mechanism in the worker (python/kopt/contract.py): the
torch-operator recorder, the second shape, the emulated TF32/bf16
reference; and the adversarial suite's table (tests/adversarial/table.py)."""

import importlib.util
import json
import os

import pytest
import torch

from conftest import PYTHON_DIR, data
from kopt import contract

REPO = os.path.dirname(PYTHON_DIR)


def evaluate(worker, cand, **terms):
    return worker.call("evaluate", task=data("relu_sized.py"), candidate={"kind": "hybrid", "path": data(cand)},
                       seeds=[11, 12], kernelbench_tol={"atol": 1e-4, "rtol": 1e-4}, timing=None, contract=terms)


def test_recorder_sees_aten_operators_but_not_foreign_compute():
    x = torch.randn(4, 5)
    with torch.no_grad(), contract.OpRecorder() as rec:
        torch.relu(x)
        out = torch.empty_like(x)
        out.copy_(x.view(-1).view(4, 5))
    assert rec.ops["aten::relu"] == 1
    assert {"aten::empty_like", "aten::copy_", "aten::view"} <= set(rec.ops)
    with contract.OpRecorder() as rec2:
        y = torch.from_numpy(x.numpy().clip(0))  # numpy: invisible, like a custom kernel
    assert "aten::relu" not in rec2.ops and "aten::clamp" not in rec2.ops
    assert torch.equal(y, torch.relu(x))
    off = contract.recording(False)
    with off:
        torch.relu(x)
    assert off.ops is None


def test_worker_reports_operators_only_when_asked(worker):
    r = evaluate(worker, "relu_finds_model.py")
    assert r["ok"], r
    assert "torch_ops" not in r
    r = evaluate(worker, "relu_finds_model.py", record_ops=True)
    ops = r["torch_ops"]
    assert ops["candidate"].get("aten::relu") == 2 and ops["candidate_forwards"] == 2, ops
    assert ops["reference"] == {"aten::relu": 1}, ops  # the reference's own call, not the harness's clone
    honest = evaluate(worker, "relu_numpy.py", record_ops=True)["torch_ops"]["candidate"]
    assert "aten::relu" not in honest and "aten::empty_like" in honest, honest


def test_second_shape_overrides_module_globals(worker):
    r = evaluate(worker, "relu_numpy.py", second_shape={"batch_size": 17, "dim": 5})
    assert r["ok"], r
    assert len(r["checks"]) == 3
    last = r["checks"][-1]
    assert last["second_shape"] == {"batch_size": 17, "dim": 5}
    assert last["order"] == "candidate_first"
    out = last["outputs"][0]
    assert out["shape"] == [17, 5] and out["ref_shape"] == [17, 5] and out["shape_ok"], out
    assert r["checks"][0]["outputs"][0]["shape"] == [8, 33]  # the first shape is untouched
    hard = evaluate(worker, "relu_hardcoded.py", second_shape={"batch_size": 17})
    assert hard["checks"][0]["outputs"][0]["shape_ok"]
    bad = hard["checks"][-1]["outputs"][0]
    assert not bad["shape_ok"] and bad["shape"] == [8, 33] and bad["ref_shape"] == [17, 33], bad


@pytest.mark.parametrize("name,words", [("label", "is a str"), ("nothing", "is not defined")])
def test_second_shape_of_a_non_integer_is_a_task_error(worker, name, words):
    r = evaluate(worker, "relu_numpy.py", second_shape={name: 3})
    assert not r["ok"] and r["error"]["kind"] == "task_load", r
    assert words in r["error"]["message"] and "module-level integer" in r["error"]["message"]


def test_bad_contract_is_a_bad_request(worker):
    for terms in ({"precision": "fp8"}, {"second_shape": {"batch_size": "big"}}):
        r = evaluate(worker, "relu_numpy.py", **terms)
        assert not r["ok"] and r["error"]["kind"] == "bad_request", r


def test_round_mantissa_is_round_to_nearest_even():
    t = torch.tensor([1.0, 1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 3 * 2 ** -11), float("inf"), float("nan")])
    r = contract.round_mantissa(t, 10)
    assert r[0] == 1.0 and r[1] == 1.0  # a tie goes to the even mantissa
    assert r[2] == 1 + 2 ** -9 and r[3] == -(1 + 2 ** -9)
    assert r[4] == float("inf") and torch.isnan(r[5])
    assert contract.round_mantissa(t.double(), 10).dtype == torch.float64  # only fp32 is rounded


def test_emulated_tf32_reference_error_sits_between_fp32_and_bf16():
    torch.manual_seed(0)
    a, b = torch.randn(256, 512), torch.randn(512, 256)
    truth = a.double() @ b.double()

    def rel(m):
        return float((m.double() - truth).norm() / truth.norm())

    with contract.RoundMatrixOperands(10):
        tf32 = a @ b
    with contract.RoundMatrixOperands(7):
        bf16 = a @ b
    assert rel(a @ b) < 1e-6 < 5e-5 < rel(tf32) < 1e-3 < rel(bf16) < 1e-2
    lin = torch.nn.Linear(512, 8)
    with torch.no_grad(), contract.RoundMatrixOperands(10):
        y = lin(a)  # addmm: the bias is added in fp32, the operands are rounded
    assert 0 < float((y - lin(a)).abs().max()) < 1e-2


def test_worker_reports_the_emulated_reference_under_a_tf32_contract(worker):
    task = data("linear_relu.py")
    cand = {"kind": "hybrid", "path": data("linear_relu_ok.py")}
    strict = worker.call("evaluate", task=task, candidate=cand, seeds=[11], timing=None)
    assert "reflowp_vs_ref64" not in strict["checks"][0]["outputs"][0]
    r = worker.call("evaluate", task=task, candidate=cand, seeds=[11], timing=None, contract={"precision": "tf32"})
    out = r["checks"][0]["outputs"][0]
    assert out["precision"] == "tf32"
    assert out["reflowp_vs_ref64"]["rel_l2"] > out["ref32_vs_ref64"]["rel_l2"], out


# --- tests/adversarial: cases.json and the table -----------------------------

ADV = os.path.join(REPO, "tests", "adversarial")


def _table():
    spec = importlib.util.spec_from_file_location("adv_table", os.path.join(ADV, "table.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_cases_json_is_well_formed():
    cases = json.load(open(os.path.join(ADV, "cases.json")))["cases"]
    kopt_options = {"--second-shape", "--forbid-torch-ops", "--allow-torch-ops", "--precision", "--sandbox",
                    "--contract", "--tolerance"}
    for c in cases:
        assert os.path.isfile(os.path.join(ADV, c["candidate"])), c
        assert os.path.isfile(os.path.join(REPO, c["task"])), c
        assert c["expect"] in ("incorrect", "measured", "crashed", "timed_out", "build_failed"), c
        assert isinstance(c.get("args", []), list) and all(isinstance(a, str) for a in c.get("args", [])), c
        assert {a for a in c.get("args", []) if a.startswith("--")} <= kopt_options, c
        if c.get("honest"):
            assert c["expect"] == "measured" and not c.get("reason"), c
    attacks = {c["attack"] for c in cases if not c.get("honest")}
    assert len(attacks) == len([c for c in cases if not c.get("honest")])  # names are unique
    assert all(c.get("defended", True) for c in cases), "every listed cheat is defended now"


def test_table_marks_pass_miss_accepted_and_false_alarm(tmp_path):
    table = _table()
    cases = [
        {"attack": "zeros", "expect": "incorrect", "reason": "float64 truth"},
        {"attack": "sneaky", "expect": "incorrect", "reason": "second shape"},
        {"attack": "kahan", "honest": True, "expect": "measured", "reason": ""},
        {"attack": "graph", "honest": True, "expect": "measured", "reason": ""},
    ]
    (tmp_path / "cases.json").write_text(json.dumps({"cases": cases}))
    rec = {0: {"verdict": "incorrect", "reasons": ["the output is off by 1 against the float64 truth"]},
           1: {"verdict": "measured", "speedup_vs_eager": 3.0},
           2: {"verdict": "measured", "speedup_vs_eager": 1.1},
           3: {"verdict": "incorrect", "reasons": ["the output changes between runs"]}}
    for i, o in rec.items():
        (tmp_path / f"{i}.json").write_text(json.dumps({"records": [{"outcome": o}]}))
    (tmp_path / "list").write_text("".join(f"{i}\tt\tc\n" for i in rec))
    text, bad = table.render(table.load(str(tmp_path / "cases.json"), str(tmp_path)))
    lines = text.splitlines()
    assert any(l.startswith("zeros") and "PASS" in l for l in lines), text
    assert any(l.startswith("sneaky") and "MISS" in l for l in lines), text
    assert any(l.startswith("kahan") and "ACCEPTED" in l and "1.10x vs eager" in l for l in lines), text
    assert any(l.startswith("graph") and "FALSE ALARM" in l for l in lines), text
    assert "2 attack(s), 1 miss(es); 2 honest kernel(s), 1 false alarm(s)" in text
    assert bad == 2
