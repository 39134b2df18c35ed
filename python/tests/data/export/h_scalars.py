import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, alpha: float, shift: int, negate: bool) -> torch.Tensor:
        y = torch.add(torch.mul(x, alpha), shift)
        return torch.neg(y) if negate else y
