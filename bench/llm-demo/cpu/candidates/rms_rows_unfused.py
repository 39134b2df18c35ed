import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
