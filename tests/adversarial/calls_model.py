# Not a kernel at all: find the task's own Model among the loaded modules
# (kopt imports the task before the candidate) and call it. Correct and
# honestly timed at ~1x; under a contract that forbids torch operators
# (--forbid-torch-ops) the worker sees it call the reference's aten operator.
import sys

import torch.nn as nn


def _task_model():
    for m in list(sys.modules.values()):
        if hasattr(m, "Model") and hasattr(m, "get_inputs") and hasattr(m, "get_init_inputs"):
            return m.Model
    raise RuntimeError("no task module is loaded")


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.ref = _task_model()(*args)

    def forward(self, *xs):
        return self.ref(*xs)
