import torch
import torch.nn as nn


class Model(nn.Module):
    """y = sum_{k=1..64} exp(-(k/64) x^2): 64 exponentials per element."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x2 = x * x
        y = torch.zeros_like(x)
        for k in range(1, 65):
            y = y + torch.exp(x2 * (-k / 64.0))
        return y


rows = 4096
cols = 2048


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
