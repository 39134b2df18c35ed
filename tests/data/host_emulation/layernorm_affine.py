import torch
import torch.nn as nn


class Model(nn.Module):
    """LayerNorm with weight and bias over the last dimension, then ReLU."""

    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        with torch.no_grad():
            self.ln.weight.normal_(1.0, 0.2)
            self.ln.bias.normal_(0.0, 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.ln(x))


dim = 96


def get_inputs():
    return [torch.randn(4, 6, dim)]


def get_init_inputs():
    return [dim]
