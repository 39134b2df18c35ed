# Fault: allocates device memory in 1 GiB pieces until none is left.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        hoard = []
        while True:
            hoard.append(torch.empty(1 << 30, dtype=torch.uint8, device=x.device))
