import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU on inputs from torch.rand: on [0, 1) it is the identity (the
    KernelBench habit kopt's extra input distributions exist for)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4096
dim = 8192


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
