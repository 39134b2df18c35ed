import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear -> Dropout(p=0.0) -> Mish -> scale -> LogSoftmax over features.
    Dropout has p=0 so the module stays deterministic in training mode."""

    def __init__(self, in_features: int, out_features: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(p=0.0)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = self.dropout(x)
        x = F.mish(x)
        x = x * self.scale
        return torch.log_softmax(x, dim=1)


batch_size = 8192
in_features = 2048
out_features = 4096
scale = 2.0


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scale]
