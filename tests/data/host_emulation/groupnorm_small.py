import torch
import torch.nn as nn


class Model(nn.Module):
    """GroupNorm, 4 groups of 2 channels, with a random affine."""

    def __init__(self, groups: int, channels: int):
        super().__init__()
        self.gn = nn.GroupNorm(groups, channels)
        with torch.no_grad():
            self.gn.weight.normal_(1.0, 0.2)
            self.gn.bias.normal_(0.0, 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


def get_inputs():
    return [torch.randn(3, 8, 5, 6)]


def get_init_inputs():
    return [4, 8]
