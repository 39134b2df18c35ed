import torch
import torch.nn as nn


class Model(nn.Module):
    """Inclusive prefix sum along dim 0 of [10, 3, 8]: ten rows, one chunk,
    so each thread walks its whole column (the serial driver)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=0)


def get_inputs():
    return [torch.randn(10, 3, 8)]


def get_init_inputs():
    return []
