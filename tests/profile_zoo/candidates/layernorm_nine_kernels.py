"""FLAWED (hybrid, written outside kopt): LayerNorm over the last dim as nine
separate PyTorch operators (mean, subtract, square, mean, add eps, rsqrt,
multiply, scale, shift): every intermediate is a full tensor that
round-trips DRAM, about 9x the bytes one fused pass moves."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=1e-5)  # same parameters as Model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        centered = x - mean
        sq = centered * centered
        var = sq.mean(dim=-1, keepdim=True)
        inv = torch.rsqrt(var + self.ln.eps)
        y = centered * inv
        return y * self.ln.weight + self.ln.bias
