import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise chain on an NCHW tensor: x * sigmoid(x) (SiLU written by
    hand), plus a learned per-channel bias broadcast over N, H, W, times a
    constant, then clamped to [clamp_min, clamp_max]."""

    def __init__(self, channels: int, scale: float, clamp_min: float, clamp_max: float):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(channels, 1, 1))
        self.scale = scale
        self.clamp_min = clamp_min
        self.clamp_max = clamp_max

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * torch.sigmoid(x)
        y = y + self.bias
        y = y * self.scale
        return torch.clamp(y, min=self.clamp_min, max=self.clamp_max)


batch_size = 32
channels = 96
height = 160
width = 160
scale = 1.5
clamp_min = -0.5
clamp_max = 2.5


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels, scale, clamp_min, clamp_max]
