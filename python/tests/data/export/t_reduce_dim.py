import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over one dimension, chosen at construction."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(8, 16, 32)]


def get_init_inputs():
    return [1]
