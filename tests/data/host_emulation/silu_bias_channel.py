import torch
import torch.nn as nn


class Model(nn.Module):
    """SiLU by hand, a per-channel bias over N, H, W, a scale and a clamp:
    H*W is a multiple of 4, so a 4-wide step shares one bias value."""

    def __init__(self, channels: int):
        super().__init__()
        self.bias = nn.Parameter(0.5 * torch.randn(channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * torch.sigmoid(x) + self.bias
        return torch.clamp(y * 1.5, min=-0.5, max=2.5)


batch_size = 3
channels = 5
height = 4
width = 10


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
