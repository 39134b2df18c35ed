import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.logsumexp over the last dim of a 3-D tensor -> (batch, seq)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(x, dim=-1)


batch_size = 16
seq_len = 2048
dim = 5000


def get_inputs():
    # spread-out values plus a per-row offset, so the result varies per row
    # (logsumexp of thousands of unit-variance values is nearly constant)
    x = torch.randn(batch_size, seq_len, dim) * 2.0 + torch.randn(batch_size, seq_len, 1) * 4.0
    return [x]


def get_init_inputs():
    return []
