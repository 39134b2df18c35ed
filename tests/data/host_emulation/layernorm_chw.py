import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm over [C, H, W] (three trailing dims), with affine weights."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm([5, 6, 7])
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(3, 5, 6, 7) * 2 + 1]


def get_init_inputs():
    return []
