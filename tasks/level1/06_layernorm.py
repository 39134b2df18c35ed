import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm over the hidden dimension (elementwise affine: weight and
    bias are parameters, passed to a cuda candidate after the input)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 32768
hidden = 4096


def get_inputs():
    x = torch.randn(batch_size, hidden) * 2.0 + 0.5
    return [x]


def get_init_inputs():
    return [hidden]
