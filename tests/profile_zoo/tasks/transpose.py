import torch
import torch.nn as nn


class Model(nn.Module):
    """Out-of-place 2-D transpose (memory-bound: 512 MB in, 512 MB out)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous()


rows = 8192
cols = 16384


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
