import torch
import torch.nn as nn


class Model(nn.Module):
    """conv -> ReLU -> + a per-channel bias [C, 1, 1] -> + 0.5 * the conv's
    output: for the channels-last replay's fused tail, which reads the
    NHWC convolution output through shared-memory tiles and writes NCHW.
    37 output channels (not a multiple of 4: scalar loads; two channel tiles) over 5 x 11
    positions (tiles cut at both edges)."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(5, channels, 3, padding=1)
        self.bias = nn.Parameter(torch.randn(channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return torch.relu(y) + self.bias + 0.5 * y


batch_size = 3
height = 5
width = 11


def get_inputs():
    return [torch.randn(batch_size, 5, height, width)]


def get_init_inputs():
    return [37]
