import torch
import torch.nn as nn


class Model(nn.Module):
    """Inclusive cumulative product along dim 0 of [37, 24]: 6 float4
    column slots, 37 rows (three chunks of 16, the last cut short) joined
    by the look-back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x, dim=0)


def get_inputs():
    # factors near 1: the products stay well-conditioned
    return [1.0 + (torch.rand(37, 24) - 0.5) * 0.2]


def get_init_inputs():
    return []
