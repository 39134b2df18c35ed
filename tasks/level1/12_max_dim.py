import torch
import torch.nn as nn


class Model(nn.Module):
    """Max over the leading dimension (values only)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=self.dim)[0]


rows = 4096
cols = 32768
reduce_dim = 0


def get_inputs():
    x = torch.randn(rows, cols)
    return [x]


def get_init_inputs():
    return [reduce_dim]
