import torch
import torch.nn as nn


class Model(nn.Module):
    """A deep, narrow MLP: 96 Linear(256, 256) + ReLU layers on a batch of 64,
    about 193 small kernels per call (launch-bound)."""

    def __init__(self, depth: int = 96, width: int = 256):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.ReLU()]
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


batch = 64
width = 256


def get_inputs():
    return [torch.randn(batch, width)]


def get_init_inputs():
    return [96, width]
