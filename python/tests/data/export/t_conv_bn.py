import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d -> BatchNorm2d (training mode: batch statistics) -> ReLU.
    Parameters: conv weight and bias, bn weight and bias; buffers: bn running
    mean, running var and the batch counter."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(4, 3, 12, 12)]


def get_init_inputs():
    return [3, 8, 3]
