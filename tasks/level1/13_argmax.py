import torch
import torch.nn as nn


class Model(nn.Module):
    """Argmax over the last dimension; the output is int64."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


batch_size = 65536
dim = 2048
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [reduce_dim]
