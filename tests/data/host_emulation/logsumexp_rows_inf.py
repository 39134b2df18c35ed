import torch
import torch.nn as nn


class Model(nn.Module):
    """logsumexp over rows of 300 with -inf every 7th element of one row and
    in all but one element of another (they add nothing to the sum; the
    verifier takes finite results only, so no row is all -inf or holds +inf)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(x, dim=-1)


def get_inputs():
    x = torch.randn(6, 300) * 3.0
    x[1, 1:] = float("-inf")
    x[3, ::7] = float("-inf")
    return [x]


def get_init_inputs():
    return []
