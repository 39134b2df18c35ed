import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        m = x.max(dim=1, keepdim=True).values
        e = (x - m).exp()
        return m.squeeze(1), e / e.sum(dim=1, keepdim=True)
