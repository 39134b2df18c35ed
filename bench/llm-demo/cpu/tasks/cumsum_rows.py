import torch
import torch.nn as nn


class Model(nn.Module):
    """Inclusive prefix sum along dim 1, one row at a time. The CPU stand-in
    for level1/16_cumsum in bench/llm_demo.sh."""

    def forward(self, x):
        return torch.stack([torch.cumsum(r, dim=0) for r in x])


batch_size = 256
length = 64


def get_inputs():
    # Non-negative values keep fp32 prefix sums well-conditioned.
    return [torch.rand(batch_size, length)]


def get_init_inputs():
    return []
