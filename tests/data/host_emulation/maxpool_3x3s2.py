import torch
import torch.nn as nn


class Model(nn.Module):
    """Max pooling, 3x3 window, stride 2, padding 1."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(2, 3, 17, 15)]


def get_init_inputs():
    return []
