import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x * torch.sigmoid(x) * 1.5, -0.5, 2.5)
