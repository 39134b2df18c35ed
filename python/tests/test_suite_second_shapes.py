"""The suite's second shapes (tasks/**/<stem>.contract.json), on the CPU:
every task with a shipped solution has one, each name is a module-level
integer of the task, the inputs (or parameters) really change shape, and the
reference runs there through the worker's own code (kopt.contract's
task_variant, kopt.tasks' Reference)."""

import glob
import json
import os

import pytest
import torch

from kopt import contract
from kopt.inputs import make_inputs
from kopt.tasks import Reference, load_task

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASKS = os.path.join(ROOT, "tasks")


def tasks_with_solutions():
    out = []
    for path in sorted(glob.glob(os.path.join(TASKS, "level*", "*.py"))):
        stem = os.path.splitext(os.path.basename(path))[0]
        sols = glob.glob(os.path.join(os.path.dirname(path), "solutions", stem + "*"))
        if any(s.endswith((".cu", ".py")) for s in sols):
            out.append(path)
    return out


TASKS_WITH_SOLUTIONS = tasks_with_solutions()


def second_shape(path):
    cfile = os.path.splitext(path)[0] + ".contract.json"
    assert os.path.exists(cfile), f"{os.path.relpath(path, ROOT)} has solutions but no contract file with a second shape"
    with open(cfile) as f:
        shape = json.load(f).get("second_shape")
    assert shape, f"{os.path.relpath(cfile, ROOT)} has no second_shape"
    return shape


def test_the_suite_has_tasks_with_solutions():
    assert len(TASKS_WITH_SOLUTIONS) >= 16


def shapes_of(values):
    return [tuple(v.shape) for v in values if isinstance(v, torch.Tensor)]


@pytest.mark.parametrize("path", TASKS_WITH_SOLUTIONS, ids=lambda p: os.path.relpath(p, TASKS))
def test_second_shape_changes_the_problem_and_the_reference_runs(path):
    shape = second_shape(path)
    first = load_task(path)
    for name, value in shape.items():
        assert getattr(first, name) != value, f"{name}={value} is the task's own value"
    variant = contract.task_variant(path, shape)  # names must be module-level ints
    # Each overridden name really sizes the problem: one more changes the
    # inputs or the parameters (compared at the small second shape, not the
    # task's full size).
    cpu = torch.device("cpu")
    ref2 = Reference(variant, cpu, 42)
    args2 = make_inputs(variant, 0, cpu)
    for name in shape:
        bumped = contract.task_variant(path, dict(shape, **{name: shape[name] + 1}))
        ref3 = Reference(bumped, cpu, 42)
        same_inputs = shapes_of(make_inputs(bumped, 0, cpu)) == shapes_of(args2)
        same_params = [tuple(p.shape) for _, p in ref3.params] == [tuple(p.shape) for _, p in ref2.params]
        assert not (same_inputs and same_params), f"{name} does not size the problem"
    # The reference at the second shape: finite, and the output shape follows.
    outs = ref2.forward(args2, 0)
    assert outs and all(isinstance(o, torch.Tensor) for o in outs)
    for o in outs:
        assert torch.isfinite(o.double()).all(), f"non-finite output at {shape}"
