import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm1d over [N, C] without an affine transform or running
    statistics: the channels-last template's scalar path (C = 7)."""

    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm1d(channels, affine=False, track_running_stats=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(45, 7) - 2.0]


def get_init_inputs():
    return [7]
