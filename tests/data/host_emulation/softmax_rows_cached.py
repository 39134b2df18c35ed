import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over rows of 640 that the row kernel keeps in registers (the
    max, then the sum of exps, from the cached values)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x * 1.5, dim=-1)


def get_inputs():
    return [torch.randn(7, 640)]


def get_init_inputs():
    return []
