import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x * torch.rsqrt(torch.einsum("ij,ij->i", x, x).unsqueeze(1) / x.shape[-1] + 1e-6)
