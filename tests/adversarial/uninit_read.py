# Cheat: a reduction-style bug: accumulate into torch.empty (never zeroed).
# Right only when the allocator happens to hand out a zeroed block.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        acc = torch.empty_like(x)
        acc += torch.relu(x)
        return acc
