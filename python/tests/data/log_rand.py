import torch
import torch.nn as nn


class Model(nn.Module):
    """log(x) on [0, 1) inputs: not defined on signed inputs (NaN), so no
    candidate is checked there."""

    def forward(self, x):
        return torch.log(x + 1e-3)


def get_inputs():
    return [torch.rand(4, 32)]


def get_init_inputs():
    return []
