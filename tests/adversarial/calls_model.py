# Not a kernel at all: find the task's own Model (through the harness's call
# stack, or among the loaded modules) and call it. Correct and
# honestly timed at ~1x; under a contract that forbids torch operators
# (--forbid-torch-ops) the worker sees it call the reference's aten operator.
import sys

import torch.nn as nn


def _task_model():
    # The harness that builds ModelNew holds the task: look up the call stack
    # for it, then fall back to the most recently imported task module.
    frame = sys._getframe(1)
    while frame is not None:
        for v in frame.f_locals.values():
            task = getattr(v, "task", None)
            if task is not None and hasattr(task, "Model") and hasattr(task, "get_inputs"):
                return task.Model
        frame = frame.f_back
    for m in reversed(list(sys.modules.values())):
        if hasattr(m, "Model") and hasattr(m, "get_inputs") and hasattr(m, "get_init_inputs"):
            return m.Model
    raise RuntimeError("no task module is loaded")


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.ref = _task_model()(*args)

    def forward(self, *xs):
        return self.ref(*xs)
