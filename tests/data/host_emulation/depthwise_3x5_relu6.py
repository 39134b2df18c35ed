import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise 3x5 convolution, stride (1, 2), padding (1, 0), with a bias,
    then ReLU6 (the template's epilogue). The weights are scaled up so that
    both of ReLU6's bounds clip."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, (3, 5), stride=(1, 2), padding=(1, 0),
                              groups=channels, bias=True)
        with torch.no_grad():
            self.conv.weight.mul_(8.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.relu6(self.conv(x))


def get_inputs():
    return [torch.randn(3, 6, 9, 23)]


def get_init_inputs():
    return [6]
