import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Causal scaled-dot-product attention in fp16 (needs torch >= 2.0)."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


batch_size = 16
num_heads = 16
seq_len = 2048
head_dim = 128


def get_inputs():
    shape = (batch_size, num_heads, seq_len, head_dim)
    q = torch.randn(shape, dtype=torch.float16)
    k = torch.randn(shape, dtype=torch.float16)
    v = torch.randn(shape, dtype=torch.float16)
    return [q, k, v]


def get_init_inputs():
    return []
