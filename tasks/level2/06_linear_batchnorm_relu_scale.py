import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear -> BatchNorm1d (training mode: batch statistics) -> ReLU ->
    multiply by a learned per-feature scale (nn.Parameter)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features, eps=1e-5, momentum=0.1)
        self.scale = nn.Parameter(torch.rand(out_features) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = self.bn(x)
        x = torch.relu(x)
        return x * self.scale


batch_size = 16384
in_features = 1024
out_features = 4096


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
