import torch
import torch.nn as nn


class Model(nn.Module):
    """Normalizes by a Python float read from the data: no meta-device forward
    exists for that, so an export finds the output shape with one real call."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / float(x.abs().max())


def get_inputs():
    return [torch.randn(6, 10)]


def get_init_inputs():
    return []
