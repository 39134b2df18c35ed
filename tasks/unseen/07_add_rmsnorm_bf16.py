import torch
import torch.nn as nn


class Model(nn.Module):
    """bf16 residual add + RMSNorm, LLaMA style: h = x + residual (bf16);
    y = weight * (h.float() * rsqrt(mean(h.float()^2) + eps)).to(bf16).
    Returns the tuple (y, h). `weight` is a bf16 nn.Parameter."""

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter((1.0 + 0.1 * torch.randn(hidden)).to(torch.bfloat16))

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        h = x + residual
        hf = h.float()
        var = hf.pow(2).mean(dim=-1, keepdim=True)
        y = (hf * torch.rsqrt(var + self.eps)).to(torch.bfloat16)
        return self.weight * y, h


batch_size = 4
seq_len = 4096
hidden = 4096


def get_inputs():
    x = torch.randn(batch_size, seq_len, hidden, dtype=torch.bfloat16)
    residual = torch.randn(batch_size, seq_len, hidden, dtype=torch.bfloat16)
    return [x, residual]


def get_init_inputs():
    return [hidden, 1e-6]
