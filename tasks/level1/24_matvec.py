import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix-vector product: (M, K) @ (K, 1) -> (M, 1). Memory-bound."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 16384
K = 16384


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, 1)
    return [A, B]


def get_init_inputs():
    return []
