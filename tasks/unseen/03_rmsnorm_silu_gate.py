import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Gated RMSNorm over the last dim with two inputs:
    rmsnorm(x) * weight * silu(gate), eps 1e-5 (as in gated-MLP / Mamba-style
    blocks). `weight` is an nn.Parameter initialised to 1 + 0.1*randn."""

    def __init__(self, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (x * rms) * self.weight * F.silu(gate)


batch_size = 4
seq_len = 2048
hidden = 5120


def get_inputs():
    x = torch.randn(batch_size, seq_len, hidden)
    gate = torch.randn(batch_size, seq_len, hidden)
    return [x, gate]


def get_init_inputs():
    return [hidden, 1e-5]
