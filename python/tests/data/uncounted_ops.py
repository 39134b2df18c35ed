import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU, then a sort (no FLOP rule: comparisons, not arithmetic kopt
    counts), then data movement (flip, slice: zero FLOPs by rule) and a
    cumulative sum (a reduction rule)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        v, _ = torch.sort(torch.relu(x), dim=1)
        return v.flip(1)[:, :4].contiguous() + torch.cumsum(v, 1)[:, :4]


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
