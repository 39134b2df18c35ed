import torch
import torch.nn as nn


class Model(nn.Module):
    """A 4x4 stride-2 transposed convolution with a bias whose output the
    forward returns (the bias moves into a tail of its own, as for a
    convolution). 7 output channels (scalar loads) over 10 x 14 positions."""

    def __init__(self, channels: int):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(6, channels, 4, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


batch_size = 3
height = 5
width = 7


def get_inputs():
    return [torch.randn(batch_size, 6, height, width)]


def get_init_inputs():
    return [7]
