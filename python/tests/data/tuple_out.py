import torch
import torch.nn as nn


class Model(nn.Module):
    """Two outputs: a float reduction and an integer argmax; a scalar argument."""

    def __init__(self):
        super().__init__()

    def forward(self, x, scale: float):
        return x.sum(dim=1) * scale, x.argmax(dim=1)


def get_inputs():
    return [torch.randn(4, 16), 2.0]


def get_init_inputs():
    return []
