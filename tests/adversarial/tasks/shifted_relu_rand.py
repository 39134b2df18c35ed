import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x - 1) on torch.rand inputs: zero everywhere on the task's own
    distribution and on signed inputs in (-1, 1); only a wider scale shows
    what it computes."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x - 1.0)


batch_size = 4096
dim = 8192


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
