import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm1d over [N, C] in training mode (channels last by nature)
    with a random affine and momentum 0.3, inputs far from zero mean: the
    channels-last template; C = 36 takes its float4 path, 9 groups of 4
    channels side by side and 28 row slots per block."""

    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(channels, momentum=0.3)
        with torch.no_grad():
            self.bn.weight.normal_(1.0, 0.2)
            self.bn.bias.normal_(0.0, 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(203, 36) * 3.0 + 40.0]


def get_init_inputs():
    return [36]
