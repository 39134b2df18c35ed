import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear (GEMM + bias) -> GELU -> multiply by a constant."""

    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = F.gelu(x)
        return x * self.scaling_factor


batch_size = 8192
in_features = 4096
out_features = 4096
scaling_factor = 1.5


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
