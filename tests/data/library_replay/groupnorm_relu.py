import torch
import torch.nn as nn


class Model(nn.Module):
    """conv -> GroupNorm without affine parameters -> ReLU: one op after the
    norm, a fused tail only once the norm's scale and shift fold into it.
    15 channels in 3 groups of 5 (odd), over 7 x 5 positions."""

    def __init__(self, channels: int, groups: int):
        super().__init__()
        self.conv = nn.Conv2d(4, channels, 3, padding=1)
        self.norm = nn.GroupNorm(groups, channels, affine=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.conv(x)))


batch_size = 3
height = 7
width = 5


def get_inputs():
    return [torch.randn(batch_size, 4, height, width)]


def get_init_inputs():
    return [15, 3]
