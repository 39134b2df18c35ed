import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise 5x5 convolution with a depth multiplier of 2 (4 -> 8
    channels), stride 2, padding 2, dilation 2 and a bias. W = 20: the
    template's float4 tile loads."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, 2 * channels, 5, stride=2, padding=2, dilation=2,
                              groups=channels, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(2, 4, 17, 20)]


def get_init_inputs():
    return [4]
