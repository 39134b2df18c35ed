import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d -> ReLU -> add a learned per-channel bias (an nn.Parameter
    broadcast over N, H, W)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.relu(x)
        return x + self.bias


batch_size = 32
in_channels = 64
out_channels = 128
height = 128
width = 128
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
