import torch
import torch.nn as nn


class Model(nn.Module):
    """fp32 (2048 x 2048) @ (2048 x 2048) under the default, strict fp32
    contract: TF32 is not allowed."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


n = 2048


def get_inputs():
    return [torch.randn(n, n), torch.randn(n, n)]


def get_init_inputs():
    return []
