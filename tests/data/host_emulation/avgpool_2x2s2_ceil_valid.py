import torch
import torch.nn as nn


class Model(nn.Module):
    """Average pooling 2x2, stride 2, ceil_mode, dividing by the valid
    elements only: rows of 24 (float4 loads, no overlap between windows), an
    odd height (the last row of windows half outside the input)."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2, ceil_mode=True, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(2, 3, 11, 24)]


def get_init_inputs():
    return []
