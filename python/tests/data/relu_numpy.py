"""An honest ReLU that calls no torch operator (numpy stands in for a custom
kernel: the dispatcher never sees it), for contracts forbidding torch ops."""
import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        np.maximum(x.numpy(), 0, out=out.numpy())
        return out
