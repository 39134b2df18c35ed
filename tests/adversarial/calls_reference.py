# Not a speed-up at all: call the task's own operator (what Model does).
# Correct and honestly timed, at ~1x. Under the default contract (torch
# operators allowed) kopt accepts it; under a contract that forbids torch
# operators (--forbid-torch-ops, or "torch_ops": false in the task's
# contract file) the worker records it calling aten::relu and kopt rejects it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
