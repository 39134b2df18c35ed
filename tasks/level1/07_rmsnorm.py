import torch
import torch.nn as nn


class Model(nn.Module):
    """RMSNorm written by hand over the last dimension, with a learned scale
    created as an nn.Parameter (not all ones, so a candidate must apply it)."""

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


batch_size = 8
seq_len = 4096
hidden = 4096


def get_inputs():
    x = torch.randn(batch_size, seq_len, hidden)
    return [x]


def get_init_inputs():
    return [hidden, 1e-6]
