import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """KL divergence with reduction='batchmean': xlogy(t, t) - t * log(p)
    summed over everything, then divided by the batch (a scalar step after
    the total, applied by the total kernel). A fifth of the targets are
    exact zeros (xlogy's 0 * log 0 = 0)."""

    def __init__(self):
        super().__init__()

    def forward(self, p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return F.kl_div(torch.log(p), t, reduction="batchmean")


batch = 300
classes = 37


def get_inputs():
    p = torch.randn(batch, classes).softmax(dim=-1)
    t = torch.randn(batch, classes).softmax(dim=-1) * (torch.rand(batch, classes) > 0.2).float()
    return [p, t]


def get_init_inputs():
    return []
