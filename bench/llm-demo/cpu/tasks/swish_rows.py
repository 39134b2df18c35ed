import torch
import torch.nn as nn


class Model(nn.Module):
    """Swish (x * sigmoid(x)) one row at a time. The CPU stand-in for
    level1/03_swish in bench/llm_demo.sh."""

    def forward(self, x):
        return torch.stack([r * torch.sigmoid(r) for r in x])


batch_size = 256
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
