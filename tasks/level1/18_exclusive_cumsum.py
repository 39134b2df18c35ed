import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Exclusive prefix sum along the last dim: out[:, 0] = 0,
    out[:, i] = sum(x[:, :i]). Same shape as the input."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inclusive = torch.cumsum(x, dim=1)
        return F.pad(inclusive[:, :-1], (1, 0))


batch_size = 8192
length = 16384


def get_inputs():
    # Non-negative values (counts, lengths, probabilities: the usual case for a
    # scan) keep the fp32 prefix sums well-conditioned; zero-mean inputs make
    # partial sums cross zero, where any two fp32 summation orders differ by
    # more than a 1e-4 tolerance.
    x = torch.rand(batch_size, length)
    return [x]


def get_init_inputs():
    return []
