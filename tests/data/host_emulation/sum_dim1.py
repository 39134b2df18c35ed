import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over a middle dimension, kept."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(4, 33, 10)]


def get_init_inputs():
    return []
