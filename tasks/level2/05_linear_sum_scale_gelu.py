import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear -> sum over the output features (keepdim) -> scale -> GELU.
    The output is (batch, 1). The sum of a linear layer can be folded into
    the weights algebraically, which is the big win here."""

    def __init__(self, in_features: int, out_features: int, scaling_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.sum(x, dim=1, keepdim=True)
        x = x * self.scaling_factor
        return F.gelu(x)


batch_size = 4096
in_features = 8192
out_features = 8192
scaling_factor = 0.02


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
