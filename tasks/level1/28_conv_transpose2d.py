import torch
import torch.nn as nn


class Model(nn.Module):
    """ConvTranspose2d 4x4, stride 2, padding 1: a 2x learned upsampling."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int,
                 stride: int, padding: int):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size,
                                         stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


batch_size = 16
in_channels = 64
out_channels = 32
kernel_size = 4
stride = 2
padding = 1
height = 128
width = 128


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
