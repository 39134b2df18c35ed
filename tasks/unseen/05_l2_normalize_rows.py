import torch
import torch.nn as nn


class Model(nn.Module):
    """L2-normalize each row: x / max(||x||_2, eps) over the last dim
    (what F.normalize does), on many short rows."""

    def __init__(self, eps: float = 1e-12):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / x.norm(p=2, dim=-1, keepdim=True).clamp_min(self.eps)


batch_size = 131072
dim = 768


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [1e-12]
