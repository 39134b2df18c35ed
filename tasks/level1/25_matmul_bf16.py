import torch
import torch.nn as nn


class Model(nn.Module):
    """Square bf16 matrix multiplication (tensor-core bound)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 8192


def get_inputs():
    A = torch.randn(N, N, dtype=torch.bfloat16)
    B = torch.randn(N, N, dtype=torch.bfloat16)
    return [A, B]


def get_init_inputs():
    return []
