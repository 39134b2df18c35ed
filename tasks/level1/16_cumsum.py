import torch
import torch.nn as nn


class Model(nn.Module):
    """Inclusive prefix sum (torch.cumsum) along dim 1."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


batch_size = 32768
length = 4096
scan_dim = 1


def get_inputs():
    # Non-negative values (counts, lengths, probabilities: the usual case for a
    # scan) keep the fp32 prefix sums well-conditioned; zero-mean inputs make
    # partial sums cross zero, where any two fp32 summation orders differ by
    # more than a 1e-4 tolerance.
    x = torch.rand(batch_size, length)
    return [x]


def get_init_inputs():
    return [scan_dim]
