import torch
import torch.nn as nn


class Model(nn.Module):
    """Swish, elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
