import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B.T with B stored (N, K) row-major (the nn.Linear layout)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


M = 4096
K = 8192
N = 2048


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(N, K)
    return [A, B]


def get_init_inputs():
    return []
