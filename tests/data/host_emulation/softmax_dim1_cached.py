import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax with a temperature over dim 1 of [3, 45, 37]: a column kernel
    with two threads per line of 45 that keep their steps in registers
    between the statistics pass and the store (the last step cut short)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / 0.7, dim=1)


def get_inputs():
    return [torch.randn(3, 45, 37)]


def get_init_inputs():
    return []
