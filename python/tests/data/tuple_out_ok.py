import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, scale: float):
        return (x * scale).sum(dim=1), torch.max(x, dim=1).indices
