"""Candidate for linear_relu.py that writes (and reads back) files in its
scratch directory ($KOPT_SCRATCH under the sandbox) and in tempfile's
folder (TMPDIR, inside scratch), then computes the correct result: writing
there is allowed."""
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        scratch = os.environ.get("KOPT_SCRATCH") or tempfile.gettempdir()
        path = os.path.join(scratch, "candidate-notes.txt")
        with open(path, "w") as f:
            f.write("allowed\n")
        with open(path) as f:
            assert f.read() == "allowed\n"
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write("also allowed\n")
        return F.linear(x, self.linear.weight, self.linear.bias).clamp_min(0.0)
