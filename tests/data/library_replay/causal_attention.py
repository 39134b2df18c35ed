import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Causal multi-head self-attention written out (QK^T, scale, triu mask,
    softmax, PV) between two projections. For the library replay's fused
    attention."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.h = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
        k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.h)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.out(y)


batch_size = 2
seq_len = 24
d_model = 32


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, 4]
