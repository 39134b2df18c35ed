import torch
import torch.nn as nn


class Model(nn.Module):
    """RMS norm over rows of 512 with a weight along the row, read four at
    a time beside the row itself."""

    def __init__(self, hidden: int):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
        return x * rms * self.weight


def get_inputs():
    return [torch.randn(10, 512)]


def get_init_inputs():
    return [512]
