"""A ModelNew for t_linear.py whose parameters have Model's names and shapes
but are created in another order (bias first). kopt, seeing the same names,
copies Model's weights into it; KernelBench builds both under one seed and
compares, so there it is wrong. kernelbench_eval.py must say so."""
import math

import torch
import torch.nn as nn


class _Linear(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.bias = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound))
        self.weight = nn.Parameter(torch.empty(out_features, in_features).uniform_(-bound, bound))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = _Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.linear.weight.t() + self.linear.bias) * self.scale
