import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU on a small (batch_size, dim) input; the contract tests override
    the module-level sizes for a second shape."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 8
dim = 33
label = "not a size"


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
