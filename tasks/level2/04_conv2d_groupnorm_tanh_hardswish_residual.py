import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d -> GroupNorm -> Tanh -> HardSwish, then add the conv output back
    (residual)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, groups: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.group_norm = nn.GroupNorm(groups, out_channels, eps=1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_conv = self.conv(x)
        x = self.group_norm(x_conv)
        x = torch.tanh(x)
        x = F.hardswish(x)
        return x_conv + x


batch_size = 32
in_channels = 32
out_channels = 64
height = 128
width = 128
kernel_size = 3
groups = 8


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, groups]
