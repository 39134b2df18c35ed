import torch
import torch.nn as nn


class Model(nn.Module):
    """Inclusive cumulative product along dim 0 (a column scan: each of the
    `dim` columns is scanned over `length` rows, stride = dim)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x, dim=0)


length = 4096
dim = 16384


def get_inputs():
    # factors in [0.99, 1.01): over 4096 steps the running products stay
    # within about [0.15, 5] (log-product std ~0.37 at the last row), so the
    # fp32 products are well-conditioned: the relative rounding error grows
    # only like sqrt(length) * 2^-24, and nothing under- or overflows
    x = 1.0 + (torch.rand(length, dim) - 0.5) * 0.02
    return [x]


def get_init_inputs():
    return []
