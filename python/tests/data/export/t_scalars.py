import torch
import torch.nn as nn


class Model(nn.Module):
    """Python scalars as forward arguments: a float, an int and a bool."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, alpha: float, shift: int, negate: bool) -> torch.Tensor:
        y = x * alpha + shift
        return -y if negate else y


def get_inputs():
    return [torch.randn(4, 8), 0.5, 3, True]


def get_init_inputs():
    return []
