import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.cumsum(x.double(), dim=1).float()
