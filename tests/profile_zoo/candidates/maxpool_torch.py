"""FLAWED? (hybrid, PyTorch's own kernel profiled as a candidate): 2-D max
pooling through F.max_pool2d, measured about 12x its floor on the H200. Far
from its floor, so some finding must say why (the dominant stall,
occupancy, memory-level parallelism)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)
