import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear -> ReLU -> scale; the constructor takes three arguments."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)) * self.scale


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 48, 0.5]
