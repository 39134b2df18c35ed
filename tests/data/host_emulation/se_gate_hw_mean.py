import torch
import torch.nn as nn


class Model(nn.Module):
    """A squeeze-and-excitation-like gate without the MLP: the mean over H and
    W, a per-channel bias, a sigmoid, the input scaled by it."""

    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(6, 1, 1) * 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean(dim=(2, 3), keepdim=True)
        return x * torch.sigmoid(s + self.bias)


def get_inputs():
    return [torch.randn(4, 6, 9, 11)]


def get_init_inputs():
    return []
